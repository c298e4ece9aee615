"""The shared tiny-model fixtures load with plain transformers and translate."""

import torch
from transformers import MarianMTModel, MarianTokenizer


def _translate(path, sentences):
    tok = MarianTokenizer.from_pretrained(str(path))
    model = MarianMTModel.from_pretrained(str(path)).eval()
    with torch.no_grad():
        out = model.generate(**tok(sentences, return_tensors="pt", padding=True), num_beams=2, max_new_tokens=20)
    return model, tok, tok.batch_decode(out, skip_special_tokens=True)


def test_tiny_model_reloads_and_translates(tiny_model_dir, tiny_corpus):
    model, tok, hyps = _translate(tiny_model_dir, [s for s, _ in tiny_corpus[:4]])
    assert tok.pad_token_id == 0 and tok.eos_token_id == 2 and model.config.decoder_start_token_id == 0
    assert model.lm_head.weight is model.model.shared.weight  # tied
    assert all(h.strip() for h in hyps)
    # trained on the corpus: most words of the references come out
    hit = sum(w in h.split() for (_, ref), h in zip(tiny_corpus[:4], hyps) for w in ref.split())
    assert hit >= 0.5 * sum(len(ref.split()) for _, ref in tiny_corpus[:4]), hyps


def test_tiny_untied_model_has_separate_embeddings(tiny_model_dir_untied):
    model, tok, hyps = _translate(tiny_model_dir_untied, ["The man sees the dog."])
    enc, dec, out = (model.model.encoder.embed_tokens.weight, model.model.decoder.embed_tokens.weight,
                     model.lm_head.weight)
    assert enc.data_ptr() != dec.data_ptr() != out.data_ptr() != enc.data_ptr()
    assert not model.config.share_encoder_decoder_embeddings and not model.config.tie_word_embeddings
    assert hyps[0].strip()

