"""Moses detokenisation (sacremoses) of Moses-tokenised corpora such as WMT APE, when `detokenize: true`.

Applied after selection, so a run over a few documents of a large corpus does not pay for detokenising
all of it; source in source_lang, reference and attrs["mt"] in target_lang.
"""

from __future__ import annotations

import dataclasses

from adaptsim.data.types import Dataset, Document
from adaptsim.errors import UserError


def detokenize(docs: Dataset, opts: dict) -> Dataset:
    if not opts.get("detokenize"):
        return docs
    from sacremoses import MosesDetokenizer

    for key in ("source_lang", "target_lang"):
        if not opts.get(key):
            raise UserError(f"dataset.{key} must be set to detokenize")
    src = MosesDetokenizer(lang=opts["source_lang"])
    tgt = MosesDetokenizer(lang=opts["target_lang"])

    def fix(seg):
        attrs = {**seg.attrs, "mt": tgt.detokenize(seg.attrs["mt"].split())} if "mt" in seg.attrs else seg.attrs
        return dataclasses.replace(seg, source=src.detokenize(seg.source.split()),
                                   reference=tgt.detokenize(seg.reference.split()), attrs=attrs)

    return Dataset([Document(d.doc_id, [fix(s) for s in d.segments]) for d in docs], docs.skipped)
