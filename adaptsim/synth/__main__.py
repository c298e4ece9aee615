"""Print generated pairs for eyeballing: python -m adaptsim.synth --domain software --n 5 --seed 1"""

from __future__ import annotations

import argparse

from .generator import Generator


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m adaptsim.synth", description=__doc__)
    p.add_argument("--domain", default="general", choices=("general", "software"))
    p.add_argument("--n", type=int, default=10, help="sentences, or segments per document with --docs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--docs", type=int, default=0, help="print this many demo documents instead")
    p.add_argument("--stats", action="store_true", help="print lexicon sizes and term counts")
    a = p.parse_args(argv)
    g = Generator(seed=a.seed)
    if a.stats:
        print(g.lexicon.counts(), {k: len(g.terms(k)) for k in ("ambiguous", "new", "shared")})
        return
    if a.docs:
        for doc in g.documents(a.domain, a.docs, a.n):
            print(f"# {doc.doc_id} focus: {', '.join(doc.focus)}")
            for en, de in doc:
                print(f"{en}\t{de}")
        return
    for en, de in g.sentences(a.domain, a.n):
        print(f"{en}\t{de}")


if __name__ == "__main__":
    main()
