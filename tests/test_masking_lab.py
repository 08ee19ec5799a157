"""The masking lab (the engine's masking on one sentence) and NSP pairs / P(IsNext)."""

from __future__ import annotations

import pytest
import torch

from bertdemo.explore import masking_lab as ml, nsp
from bertdemo.explore.masking_lab import MaskSettings

TEXT = "The children were playing football in the park until it started raining heavily."
LONG = ("Unbelievably, the tokenizer splits uncommon words like photosynthesis and bioluminescence "
        "into several pieces while common words stay whole.")
CLS, SEP, MASK = 101, 102, 103


def _check_sample(sample: ml.MaskSample) -> None:
    ids = ml.engine_tokenizer()(sample.text)["input_ids"]
    assert [t.original_id for t in sample.tokens] == ids
    for t in sample.tokens:
        if t.special:
            assert not t.chosen and t.action is None and t.input_id == t.original_id
        if t.chosen:
            assert t.label == t.original_id and t.action in {"mask", "random", "keep"}
        else:
            assert t.label == -100 and t.action is None and t.input_id == t.original_id
        if t.action == "mask":
            assert t.input_id == MASK and t.input_token == "[MASK]"
        if t.action == "keep":
            assert t.input_id == t.original_id


def test_sample_json_and_tensors() -> None:
    sample = ml.mask_sample(TEXT, MaskSettings(seed=3))
    _check_sample(sample)
    data = sample.to_json()
    assert data["tokens"][0] == {"token": "[CLS]", "chosen": False, "action": None, "input_id": CLS, "label": -100,
                                 "input_token": "[CLS]", "original_id": CLS, "position": 0, "special": True}
    assert data["tokens"][-1]["token"] == "[SEP]"
    T = len(data["tokens"])
    assert data["input_ids"] == [t["input_id"] for t in data["tokens"]]
    assert data["labels"] == [t["label"] for t in data["tokens"]]
    assert data["attention_mask"] == [1] * T
    k = round(0.15 * (T - 2))
    assert sum(t["chosen"] for t in data["tokens"]) == k, "the engine's default: exactly round(p (T-2))"
    assert f"= {k} tokens" in data["mode"] and "engine's default" in data["mode"]
    assert ml.mask_sample(TEXT, MaskSettings(seed=3)).to_json() == data, "the same seed, the same mask"


def test_exact_values_at_the_extremes() -> None:
    every = ml.mask_sample(TEXT, MaskSettings(mlm_probability=0.99, mask_replace_prob=1.0, random_replace_prob=0.0))
    real = [t for t in every.tokens if not t.special]
    assert all(t.chosen and t.input_id == MASK for t in real)
    assert [t.label for t in real] == [t.original_id for t in real]
    kept = ml.mask_sample(TEXT, MaskSettings(mlm_probability=0.5, mask_replace_prob=0.0, random_replace_prob=0.0))
    assert kept.input_ids == [t.original_id for t in kept.tokens], "all chosen tokens kept: the input is unchanged"
    assert sum(t.action == "keep" for t in kept.tokens) == round(0.5 * (len(kept.tokens) - 2))


def test_rates_over_many_seeds_bernoulli() -> None:
    """Per-token coin flips (fixed_count off), pooled over 300 seeds: within 4 standard errors."""
    settings = [MaskSettings(mlm_probability=0.2, seed=s, fixed_count=False) for s in range(300)]
    tokens = [t for s in settings for t in ml.mask_sample(TEXT, s).tokens]
    real = [t for t in tokens if not t.special]
    chosen = [t for t in real if t.chosen]
    assert not any(t.chosen for t in tokens if t.special)
    n, c = len(real), len(chosen)
    assert abs(c / n - 0.2) < 4 * (0.2 * 0.8 / n) ** 0.5
    for action, p in (("mask", 0.8), ("random", 0.1), ("keep", 0.1)):
        share = sum(t.action == action for t in chosen) / c
        assert abs(share - p) < 4 * (p * (1 - p) / c) ** 0.5, (action, share)


@pytest.mark.parametrize("fixed", [True, False])
def test_measure_rates(fixed: bool) -> None:
    stats = ml.measure_rates(TEXT, MaskSettings(mlm_probability=0.3, mask_replace_prob=0.6, random_replace_prob=0.3,
                                                fixed_count=fixed), draws=4000)
    assert stats.n_tokens == len(ml.engine_tokenizer()(TEXT)["input_ids"]) - 2
    chosen, *split = stats.rates
    if fixed:
        assert chosen.std_error == 0 and chosen.measured == chosen.setting == round(0.3 * stats.n_tokens) / stats.n_tokens
    else:
        assert abs(chosen.measured - 0.3) < 4 * chosen.std_error
    assert [round(r.setting, 6) for r in split] == [0.6, 0.3, 0.1]
    for r in split:
        assert abs(r.measured - r.setting) < 4 * r.std_error, r
    assert sum(r.count for r in split) == chosen.count


def test_static_repeats_every_n_dynamic_does_not() -> None:
    comp = ml.compare_epochs(TEXT, MaskSettings(seed=1), epochs=40, static_copies=10)
    assert len(comp.rows) == 40
    assert comp.distinct_static == 10, "static: exactly N distinct masks across the epochs"
    assert comp.distinct_dynamic > 10, "dynamic: a fresh mask each epoch"
    for r in comp.rows[10:]:
        assert r.static.input_ids == comp.rows[r.epoch - 11].static.input_ids and r.static_copy == (r.epoch - 1) % 10 + 1
    assert ml.compare_epochs(TEXT, MaskSettings(seed=1), 3, 4).rows[2].dynamic.input_ids == comp.rows[2].dynamic.input_ids
    data = comp.to_json()
    assert data["distinct_static"] == 10 and len(data["rows"]) == 40


@pytest.mark.parametrize("fixed", [True, False])
def test_whole_word_lab(fixed: bool) -> None:
    tok = ml.engine_tokenizer()
    assert any(t.startswith("##") for t in tok.tokenize(LONG))
    for seed in range(30):
        sample = ml.mask_sample(LONG, MaskSettings(mlm_probability=0.3, seed=seed, whole_word=True, fixed_count=fixed))
        _check_sample(sample)
        for prev, t in zip(sample.tokens, sample.tokens[1:]):
            if t.continuation and not prev.special:
                assert t.chosen == prev.chosen, (seed, prev.token, t.token)
        if fixed:
            assert sum(t.chosen for t in sample.tokens) <= round(0.3 * (len(sample.tokens) - 2))
    assert "whole words" in sample.mode


@pytest.mark.parametrize(
    "text, settings, message",
    [
        ("", MaskSettings(), "Enter a sentence"),
        (TEXT, MaskSettings(mlm_probability=0.0), "mlm_probability"),
        (TEXT, MaskSettings(mask_replace_prob=0.8, random_replace_prob=0.3), "within [0, 1]"),
        (TEXT, MaskSettings(seed=-1), "seed"),
        ("word " * 300, MaskSettings(), "at most 128"),
    ],
)
def test_bad_settings(text: str, settings: MaskSettings, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        ml.mask_sample(text, settings)


def test_epoch_and_draw_limits() -> None:
    with pytest.raises(ValueError, match="epochs"):
        ml.compare_epochs(TEXT, MaskSettings(), epochs=0)
    with pytest.raises(ValueError, match="draws"):
        ml.measure_rates(TEXT, MaskSettings(), draws=10**6)


# --- NSP -----------------------------------------------------------------------------------


def _assert_whole_sentences(p) -> None:
    """[CLS] A [SEP] B [SEP] with A and B whole sentences: each ends a sentence, neither starts inside a word."""
    n_a = p.token_type_ids.count(0)  # [CLS] A [SEP]
    assert p.tokens[0] == "[CLS]" and p.tokens[n_a - 1] == "[SEP]" and p.tokens[-1] == "[SEP]"
    assert p.token_type_ids == [0] * n_a + [1] * (len(p.tokens) - n_a)
    assert p.tokens[n_a - 2] in {".", "!", "?"} and p.tokens[-2] in {".", "!", "?"}
    assert not p.tokens[1].startswith("##") and not p.tokens[n_a].startswith("##")


def test_nsp_pairs_from_the_embedded_corpus_are_whole_sentences() -> None:
    pairs = nsp.build_pairs("", seq_len=64, n_pairs=8, seed=1)
    assert "embedded" in pairs.source and len(pairs.pairs) == 8
    labels = set()
    for p in pairs.pairs:
        assert len(p.tokens) <= 64
        _assert_whole_sentences(p)
        assert (p.b_block == p.block) == (p.label == 0)
        labels.add(p.label_name)
    assert labels == {"IsNext", "NotNext"}


def test_nsp_is_next_b_is_the_sentences_after_a() -> None:
    text = " ".join(f"Sentence number {w} is here." for w in "one two three four five six seven eight".split())
    pairs = nsp.build_pairs(text, seq_len=32, n_pairs=4, seed=2)
    sentences = nsp.document_sentences(text)
    assert sentences[0] == "Sentence number one is here." and len(sentences) == 8
    for p in pairs.pairs:
        _assert_whole_sentences(p)
        assert p.sentence_a in text and p.sentence_b in text
        if p.label == 0:
            assert p.sentence_a + " " + p.sentence_b in text  # B follows A word for word
        else:
            assert p.sentence_a + " " + p.sentence_b not in text
    assert {p.label for p in pairs.pairs} == {0, 1}


def test_nsp_pairs_need_two_sentences() -> None:
    with pytest.raises(ValueError, match="at least 2 sentences"):
        nsp.build_pairs("Too short.", seq_len=32)


def _nsp_config():
    from transformers import BertConfig

    return BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=64)


@pytest.fixture(scope="module")
def nsp_models(tmp_path_factory):
    """A tiny BertForPreTraining (NSP head) and a tiny BertForMaskedLM (none), saved with the tokenizer."""
    from transformers import BertForMaskedLM, BertForPreTraining

    from bertdemo.models.store import load_masked_lm

    config = _nsp_config()
    out = {}
    for name, cls in (("pretraining", BertForPreTraining), ("mlm", BertForMaskedLM)):
        torch.manual_seed(0)
        model = cls(config).eval()
        folder = tmp_path_factory.mktemp(name)
        model.save_pretrained(folder)
        ml.engine_tokenizer().save_pretrained(folder)
        out[name] = (model, load_masked_lm(str(folder)))
    return out


def test_nsp_head_probability(nsp_models) -> None:
    model, loaded = nsp_models["pretraining"]
    pred = nsp.predict_is_next(loaded, "She opened the fridge.", "It was empty.")
    assert pred.available and 0 < pred.p_is_next < 1
    enc = loaded.tokenizer("She opened the fridge.", "It was empty.", return_tensors="pt")
    with torch.no_grad():
        logits = model(**enc).seq_relationship_logits
    assert pred.p_is_next == pytest.approx(torch.softmax(logits, -1)[0, 0].item(), abs=1e-5)
    assert pred.tokens[0] == "[CLS]" and pred.tokens.count("[SEP]") == 2 and pred.token_type_ids[-1] == 1


def test_no_nsp_head_is_said_clearly(nsp_models) -> None:
    _, loaded = nsp_models["mlm"]
    pred = nsp.predict_is_next(loaded, "She opened the fridge.", "It was empty.")
    assert not pred.available and pred.p_is_next is None
    assert "no trained NSP head" in pred.message and "cls.seq_relationship" in pred.message
    with pytest.raises(ValueError, match="both"):
        nsp.predict_is_next(loaded, "", "It was empty.")


def test_nsp_reads_only_the_head_into_the_loaded_encoder(nsp_models, monkeypatch) -> None:
    import dataclasses

    from transformers import PreTrainedModel

    model, loaded = nsp_models["pretraining"]
    fresh = dataclasses.replace(loaded)  # nothing derived yet: the head is read from the checkpoint now
    assert fresh.model.base_model.pooler is None  # a masked-LM is built without the pooler the head needs

    def no_second_model(*args, **kwargs):
        raise AssertionError("NSP loaded a second model")

    monkeypatch.setattr(PreTrainedModel, "from_pretrained", no_second_model)
    pairs = [("She opened the fridge.", "It was empty."), ("The cat sat.", "Stocks fell sharply on Monday.")]
    for a, b in pairs:
        pred = nsp.predict_is_next(fresh, a, b)
        enc = fresh.tokenizer(a, b, return_tensors="pt")
        with torch.no_grad():
            want = torch.softmax(model(**enc).seq_relationship_logits, -1)[0, 0].item()
        assert torch.allclose(torch.tensor(pred.p_is_next), torch.tensor(want), atol=1e-6)
    assert fresh.derived("nsp_head", lambda: None) is not None  # kept with the loaded model


def test_nsp_head_from_a_torch_checkpoint_only_outside_public_mode(tmp_path, monkeypatch) -> None:
    import dataclasses

    from transformers import BertForPreTraining

    from bertdemo.models.store import load_masked_lm

    torch.manual_seed(0)
    config = _nsp_config()
    model = BertForPreTraining(config)
    model.config.save_pretrained(tmp_path)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")  # a torch checkpoint, no safetensors
    ml.engine_tokenizer().save_pretrained(tmp_path)
    loaded = load_masked_lm(str(tmp_path))
    assert nsp.predict_is_next(loaded, "She opened the fridge.", "It was empty.").available
    public = nsp.predict_is_next(dataclasses.replace(loaded, safetensors_only=True),  # as a public server loads
                                 "She opened the fridge.", "It was empty.")
    assert not public.available and "no trained NSP head" in public.message


def test_nsp_head_read_from_a_sharded_checkpoint(tmp_path) -> None:
    from transformers import BertForPreTraining

    from bertdemo.models.store import load_masked_lm

    torch.manual_seed(0)
    config = _nsp_config()
    model = BertForPreTraining(config).eval()
    model.save_pretrained(tmp_path, max_shard_size="1MB")
    ml.engine_tokenizer().save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors.index.json").exists() and not (tmp_path / "model.safetensors").exists()
    pred = nsp.predict_is_next(load_masked_lm(str(tmp_path)), "She opened the fridge.", "It was empty.")
    enc = ml.engine_tokenizer()("She opened the fridge.", "It was empty.", return_tensors="pt")
    with torch.no_grad():
        want = torch.softmax(model(**enc).seq_relationship_logits, -1)[0, 0].item()
    assert pred.available and abs(pred.p_is_next - want) < 1e-6


def test_the_tensor_table_scrolls_in_a_box_a_keyboard_reaches() -> None:
    """On a phone the (1, T) tensors are wider than the screen: the box that scrolls them is a named Tab stop and
    the table inside never scrolls on its own (axe's scrollable-region-focusable found the table scrolling at 390 px)."""
    from html.parser import HTMLParser

    from bertdemo.viz import masking as draw

    class Boxes(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.found: dict[str, dict[str, str]] = {}

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "table" or "mask-tensors" in (attrs.get("class") or ""):
                self.found.setdefault(tag, attrs)

    boxes = Boxes()
    boxes.feed(draw.render_tensors(ml.mask_sample(LONG, MaskSettings(seed=3))))
    box, table = boxes.found["div"], boxes.found["table"]
    assert box["tabindex"] == "0" and box["role"] == "region" and "scrolls sideways" in box["aria-label"]
    assert "overflow-x:auto" in box["style"]
    assert "display:table" in table["style"] and "overflow:visible" in table["style"]


def test_a_typed_mask_or_an_unknown_token_is_counted_in_k_and_the_page_says_so() -> None:
    """The learner walk: "2 of 9 tokens chosen" beside "k = round(0.15 × 11) = 2", and a chosen rate shown as a
    setting of 0.222. The engine counts every token between [CLS] and [SEP] in k, a typed [MASK] or an [UNK] too,
    which are never chosen: the mode says so, and the chosen fraction it expects is k of those that can be."""
    text = "The cat [MASK] on the mat 🐱 today."
    sample = ml.mask_sample(text, MaskSettings())
    candidates = sum(not t.special for t in sample.tokens)
    assert candidates == len(sample.tokens) - 4  # [CLS], [SEP], the typed [MASK], the emoji's [UNK]
    assert sample.mode.startswith(f"fixed count: exactly k = round(0.15 × {len(sample.tokens) - 2}) = 1 token (")
    assert f"only {candidates} of them can be chosen: a typed [MASK] or an [UNK] never is" in sample.mode
    whole = ml.mask_sample(text, MaskSettings(whole_word=True)).mode  # said with whole words too
    assert f"only {candidates} of them can be chosen" in whole and "= 1 token (" in whole
    stats = ml.measure_rates(text, MaskSettings(), draws=50)
    assert stats.rates[0].setting == stats.rates[0].measured == 1 / candidates
    assert "(k counts" not in ml.mask_sample(TEXT, MaskSettings()).mode  # nothing uncounted: nothing to say
    assert (stats.n_counted, stats.n_tokens) == (len(sample.tokens) - 2, candidates)


def test_learns_rates_step_gives_the_engines_k_for_a_sentence_with_an_unknown_token() -> None:
    """Learn's rates step wrote k from the tokens that can be chosen, the engine from every token between [CLS] and
    [SEP]: the sentence's k and its chosen share came from two different counts."""
    from bertdemo.learn import path as learn_path

    text = "The cat sat on the mat 🐱 🐶 while the dog slept in the sun all afternoon long."
    stats = ml.measure_rates(text, MaskSettings(), draws=100)
    k = max(1, round(0.15 * stats.n_counted))
    assert stats.n_counted == stats.n_tokens + 2  # two [UNK]s
    md, numbers, _ = learn_path._rates(None, text, "embedded/bert-mini-mlm")
    assert f"k = round(0.15 × {stats.n_counted}) = {k} (k counts all {stats.n_counted} tokens" in md
    assert numbers["chosen"] == pytest.approx(k / stats.n_tokens)
