"""Word in context: every cosine and neighbour list equals a brute-force computation with transformers
(one sentence at a time), attributions equal captum's own (integrated gradients and gradient x input on
the word embeddings, occlusion by hand), the sense readout on the labelled set beats the most-frequent-
sense guess while the static vector scores exactly that guess, and the "Show the code" snippets print
the views' numbers."""

from __future__ import annotations

import ast

import numpy as np
import pytest
import torch
from transformers import (
    AutoModel,
    AutoTokenizer,
    DistilBertConfig,
    DistilBertForMaskedLM,
    DistilBertTokenizer,
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaTokenizer,
)

from bertdemo.assets import sense_sets
from bertdemo.explore import attribution, corpus_neighbours, word_in_context
from bertdemo.explore.word_vectors import corpus_sentences
from bertdemo.limits import MAX_INDEX_TOKENS
from bertdemo.memory import MemoryBudget
from bertdemo.models import embedded
from bertdemo.models.store import load_masked_lm
from bertdemo.snippets import words as word_code
from tests.helpers import run_snippet as run


@pytest.fixture(scope="module")
def embedded_loaded():
    """The embedded masked-LM through the app's own loader."""
    from bertdemo.models import embedded
    from bertdemo.models.store import load_masked_lm

    return load_masked_lm(str(embedded.mlm_dir()), "cpu")


SENTENCES = "river | We sat on the bank of the river.\nmoney | The bank raised its rates.\nriver | The bank was muddy."


def brute_vectors(model_dir, word: str, sentences: list[str]) -> np.ndarray:
    """(L + 1, n, H): each sentence alone through stock transformers, the word's first piece at every layer."""
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    out = []
    for s in sentences:
        enc = tok(s, return_tensors="pt")
        first = tok.tokenize(word)[0]
        pos = tok.convert_ids_to_tokens(enc["input_ids"][0]).index(first)
        with torch.inference_mode():
            hidden = model(**enc, output_hidden_states=True).hidden_states
        out.append(torch.stack([h[0, pos] for h in hidden]).double().numpy())
    return np.stack(out, axis=1)


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_every_cosine_equals_a_brute_force_computation(tiny_loaded, tiny_mlm_dir):
    result = word_in_context.similarities(tiny_loaded, "bank", SENTENCES)
    sentences = [line.split("|")[1].strip() for line in SENTENCES.splitlines()]
    vectors = brute_vectors(tiny_mlm_dir, "bank", sentences)
    assert result.cosines.shape == (3, 3, 3) and result.positions == [5, 2, 2]
    for layer in range(3):
        for i in range(3):
            for j in range(3):
                assert result.cosines[layer, i, j] == pytest.approx(cos(vectors[layer, i], vectors[layer, j]), abs=1e-5)
    assert result.static_cosine == pytest.approx(1.0)  # one row of the embedding table, whatever the sentence
    same, diff = result.pair_curves()  # sentences 1 & 3 share a sense; 1 & 2 and 2 & 3 do not
    np.testing.assert_allclose(same, result.cosines[:, 0, 2])
    np.testing.assert_allclose(diff, (result.cosines[:, 0, 1] + result.cosines[:, 1, 2]) / 2)
    assert result.senses == ["river", "money", "river"]


def test_the_sentence_table_shows_each_sense_without_markup_characters(tiny_loaded):
    """The table read "*river* · We sat on…": the sense's asterisks were escaped by the table and shown."""
    from bertdemo.viz import words

    table = words.similarity_markdown(word_in_context.similarities(tiny_loaded, "bank", SENTENCES))
    first = SENTENCES.splitlines()[0].split("|")[1].strip()
    assert f"| 1 | river · {first} |" in table and "&#42;" not in table


def test_the_neighbour_table_shows_tokens_and_sentences_as_written():
    """Its cells were escaped twice: a token read "`bank`" with its backticks and a sentence's apostrophe
    "&#x27;" (the corpus is Wikipedia prose, full of them)."""
    from bertdemo.viz import words

    found = corpus_neighbours.Neighbours("m", 2, ["[CLS]", "bank", "[SEP]"], 1, [
        corpus_neighbours.Neighbour("banks", 0.91234, "The river's banks & bridges.", 3)], 300)
    table = words.neighbours_markdown(found)
    assert "| 1 | <code>banks</code> | 0.9123 | The river&#39;s banks &#38; bridges. |" in table
    assert "&amp;#" not in table and "`" not in table


def test_the_baseline_is_the_mean_cosine_of_random_corpus_words(tiny_loaded):
    baseline = word_in_context.random_word_baseline(tiny_loaded)
    assert baseline.shape == (3,) and np.all(np.abs(baseline) < 1)
    assert word_in_context.random_word_baseline(tiny_loaded) is baseline  # measured once per model


def test_a_word_of_several_pieces_is_its_first_piece(tiny_loaded):
    result = word_in_context.similarities(tiny_loaded, "tokenization", "I like tokenization.\nTokenization helps.")
    assert result.pieces == ["token", "##ization"] and "first piece, token," in result.piece_note
    assert result.positions == [3, 1]


@pytest.mark.parametrize("word, lines, message", [
    ("", "a\nb", "Type the word"),
    ("bank", "The bank.", "Give 2 to 12 sentences"),
    ("bank", "\n".join(["The bank."] * 13), "Give 2 to 12 sentences"),
    ("two words", "a\nb", "One word"),
    ("bank", "The bank.\nNo such word here.", "Sentence 2 does not use the word 'bank'"),
    ("bank", "The bank.\n" + "bank " * 70, "the limit is 64"),
])
def test_bad_input_is_refused_with_a_message(tiny_loaded, word, lines, message):
    with pytest.raises(ValueError, match=message):
        word_in_context.similarities(tiny_loaded, word, lines)


def test_sense_readout_beats_the_most_frequent_sense_and_the_static_vector_is_that_guess(embedded_loaded):
    readout = word_in_context.sense_readout(embedded_loaded)
    assert readout.n_scored == 60 and readout.most_frequent == 0.5
    best = readout.accuracy[readout.best_layer]
    assert best >= 0.85 and best - readout.most_frequent >= 0.20
    assert readout.static_accuracy == readout.most_frequent


def test_nearest_centroid_ties_go_to_the_most_frequent_sense():
    same = np.ones((5, 4))
    labels = np.array(["a", "b", "b", "a", "b"])
    guess = word_in_context.nearest_centroid(same, labels, np.ones((3, 4)), ["b", "a"])
    assert guess.tolist() == ["b", "b", "b"]


def brute_index(model_dir, texts: list[str], layer: int, max_tokens: int):
    """Every non-special token of ``texts`` (each alone, cut at 64 tokens), in order, until ``max_tokens``."""
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    keys, names, where = [], [], []
    for text in texts:
        enc = tok(text, return_tensors="pt", truncation=True, max_length=64)
        with torch.inference_mode():
            hidden = model(**enc, output_hidden_states=True).hidden_states[layer][0]
        for t in range(1, enc["input_ids"].shape[1] - 1):
            if len(keys) == max_tokens:
                return np.stack(keys), names, where
            keys.append(hidden[t].double().numpy())
            names.append(tok.convert_ids_to_tokens(int(enc["input_ids"][0, t])))
            where.append(text)
    return np.stack(keys), names, where


def test_every_neighbour_list_equals_a_brute_force_search(tiny_loaded, tiny_mlm_dir):
    text, position, layer, k, size = "We sat on the bank of the river.", 5, 2, 8, 300
    result = corpus_neighbours.neighbours(tiny_loaded, text, position, layer, k, max_tokens=size)
    keys, names, where = brute_index(tiny_mlm_dir, corpus_sentences(tiny_loaded)[:40], layer, size)
    query = brute_vectors(tiny_mlm_dir, "bank", [text])[layer, 0]
    cosines = keys @ query / (np.linalg.norm(keys, axis=1) * np.linalg.norm(query))
    top = np.argsort(-cosines, kind="stable")[:k]
    assert result.index_size == size and len(result.neighbours) == k
    assert [n.token for n in result.neighbours] == [names[i] for i in top]
    assert [n.sentence for n in result.neighbours] == [where[i] for i in top]
    np.testing.assert_allclose([n.cosine for n in result.neighbours], cosines[top], atol=1e-5)


def test_the_index_is_built_once_and_bounded(tiny_loaded):
    seen = []
    first = corpus_neighbours.neighbour_index(tiny_loaded, 1, 200, progress=lambda f, m: seen.append(f))
    again = corpus_neighbours.neighbour_index(tiny_loaded, 1, 200, progress=lambda f, m: seen.append(-1))
    assert again is first and seen and seen[-1] == 1.0 and -1 not in seen
    assert first.vectors.shape == (200, 32) and first.vectors.dtype == np.float32
    store = MemoryBudget(10_000).cache("word activations", max_bytes=1000)
    store.get_or_build(("a",), lambda: np.zeros(100), lambda a: a.nbytes)  # 800 bytes
    store.get_or_build(("b",), lambda: np.zeros(50), lambda a: a.nbytes)  # 400: "a" goes
    assert store.keys() == [("b",)] and store.bytes_held == 400
    with pytest.raises(ValueError, match="over the 0.0 MB this server keeps for word activations"):
        store.get_or_build(("c",), lambda: np.zeros(200), lambda a: a.nbytes)


def test_neighbours_refuse_bad_input(tiny_loaded):
    with pytest.raises(ValueError, match="positions 0 to 5"):
        corpus_neighbours.neighbours(tiny_loaded, "The cat sat.", 9, 1, 5, max_tokens=100)
    with pytest.raises(ValueError, match="layers 0 \\(embeddings\\) to 2"):
        corpus_neighbours.neighbours(tiny_loaded, "The cat sat.", 1, 7, 5, max_tokens=100)
    with pytest.raises(ValueError, match="k is 1 to 50"):
        corpus_neighbours.neighbours(tiny_loaded, "The cat sat.", 1, 1, 51, max_tokens=100)


def test_the_atlas_places_corpus_uses_and_your_sentences_in_one_projection(tiny_loaded):
    result = corpus_neighbours.atlas(tiny_loaded, "bank", SENTENCES, 2, clusters=2)
    found = corpus_neighbours.occurrences(tiny_loaded, "bank")
    assert result.corpus_xy.shape == (len(found.sentences), 2) and result.own_xy.shape == (3, 2)
    assert all("bank" in s.lower() for s in result.corpus_sentences) and set(result.clusters.tolist()) == {0, 1}
    x = found.vectors[2].astype(np.float64)  # PCA: the projection keeps the centred data's top-2 variance
    centred = x - x.mean(0)
    total = (centred ** 2).sum()
    assert result.explained[0] + result.explained[1] == pytest.approx((result.corpus_xy ** 2).sum() / total, rel=1e-6)


# --- attribution -------------------------------------------------------------------------------------------

MASKED = "The cat sat on the [MASK] because it was tired."


def captum_reference(loaded, text: str, target_id: int, steps: int):
    """Integrated gradients and input x gradient by captum on the word embeddings, through the full model."""
    from captum.attr import InputXGradient, IntegratedGradients

    tok, model = loaded.tokenizer, loaded.model
    enc = tok(text.replace("[MASK]", tok.mask_token), return_tensors="pt")
    ids = enc["input_ids"]
    pos = int((ids[0] == tok.mask_token_id).nonzero()[0])
    keep = torch.tensor(tok.get_special_tokens_mask(ids[0].tolist(), already_has_special_tokens=True)).bool()
    keep[pos] = True
    base_ids = torch.where(keep, ids[0], tok.pad_token_id)[None]
    table = model.get_input_embeddings()

    def f(embeds):
        n = embeds.shape[0]
        return model(inputs_embeds=embeds, token_type_ids=enc["token_type_ids"].expand(n, -1),
                     attention_mask=enc["attention_mask"].expand(n, -1)).logits[:, pos].softmax(-1)[:, target_id]

    x, base = table(ids).detach(), table(base_ids).detach()
    ig = IntegratedGradients(f).attribute(x, baselines=base, n_steps=steps)[0].sum(-1).detach().double().numpy()
    gxi = InputXGradient(f).attribute(x.clone().requires_grad_())[0].sum(-1).detach().double().numpy()
    ig[keep.numpy()] = gxi[keep.numpy()] = 0
    with torch.no_grad():
        full = float(f(x)[0])
        occ = []
        for t in range(ids.shape[1]):
            changed = ids.clone()
            changed[0, t] = tok.pad_token_id
            occ.append(0.0 if keep[t] else full - float(f(table(changed))[0]))
        base_prob = float(f(base)[0])
    return ig, gxi, np.array(occ), full, base_prob


def test_attributions_equal_captums_own(embedded_loaded):
    """On the embedded model, whose probabilities are far from 0 (a random model's differences of ~1e-9
    are float rounding)."""
    result = attribution.attribute(embedded_loaded, MASKED, 1, "mat", steps=20)
    ig, gxi, occ, prob, base_prob = captum_reference(embedded_loaded, MASKED, result.target_id, 20)
    scale = np.abs(ig).max()
    np.testing.assert_allclose(result.scores["integrated gradients"], ig, rtol=1e-4, atol=1e-4 * scale)
    np.testing.assert_allclose(result.scores["gradient x input"], gxi, rtol=1e-4, atol=1e-4 * np.abs(gxi).max())
    np.testing.assert_allclose(result.scores["occlusion"], occ, rtol=1e-4, atol=1e-4 * np.abs(occ).max())
    assert result.prob == pytest.approx(prob, rel=1e-4) and result.baseline_prob == pytest.approx(base_prob, rel=1e-4)
    assert result.target == "mat" and result.tokens[result.mask_position] == "[MASK]"
    assert result.attention.shape == (len(result.tokens),) and result.attention.sum() == pytest.approx(1, abs=1e-5)


@pytest.mark.parametrize("kwargs, message", [
    (dict(text="No mask here."), "Put \\[MASK\\]"),
    (dict(text=MASKED, mask_number=2), "Mask 2 does not exist"),
    (dict(text=MASKED, target="tokenization"), "name a word of one piece"),
    (dict(text=MASKED, steps=1000), "Steps are 4 to 300"),
    (dict(text=MASKED, methods=("saliency",)), "Methods are"),
    (dict(text="[MASK] " + "word " * 70), "at most 64"),
])
def test_attribution_refuses_bad_input(tiny_loaded, kwargs, message):
    with pytest.raises(ValueError, match=message):
        attribution.attribute(tiny_loaded, **kwargs)


def cloze_sentences() -> list[str]:
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "cloze_confirm.tsv"
    return [line.split("\t")[0] for line in path.read_text().splitlines() if line and not line.startswith("#")]


@pytest.mark.slow  # integrated gradients at the default steps on 4 sentences of the embedded model: ~10 s
def test_completeness_and_removal_on_cloze_sentences(embedded_loaded):
    """At the default steps the integrated-gradient scores add up to f(input) − f(baseline) within 5 % on ≥ 90 %
    of the cloze sentences; replacing the top-20 % tokens by [PAD] lowers the prediction more than replacing a
    random 20 % (mean of 5 draws) on ≥ 80 % of them. The first 4 here, so all four must (each sentence is ~3 s of
    CPU; the first 12 all pass both); the whole set (40) is bench_words.py's."""
    sentences = cloze_sentences()
    checked = attribution.faithfulness(embedded_loaded, sentences[:4])
    assert len(sentences) >= 40 and checked.sentences == 4
    assert checked.complete >= 0.9 * checked.sentences, checked
    assert checked.removal_hurts >= 0.8 * checked.sentences, checked


# --- Show the code -----------------------------------------------------------------------------------------

def test_word_in_context_snippet_prints_the_views_cosines(tiny_mlm_dir, tiny_loaded):
    lines, _ = run(word_code.word_in_context_code(str(tiny_mlm_dir), "bank", SENTENCES))
    result = word_in_context.similarities(tiny_loaded, "bank", SENTENCES)
    printed = {tuple(map(int, line.split(" ", 2)[:2])): ast.literal_eval(line.split(" ", 2)[2]) for line in lines}
    assert set(printed) == {(1, 2), (1, 3), (2, 3)}
    for (i, j), values in printed.items():
        np.testing.assert_allclose(values, result.cosines[:, i - 1, j - 1], atol=1e-4)


def _same_neighbours(lines: list[str], namespace: dict, result) -> None:
    """The snippet searched the view's index (every token of it) and printed the view's neighbours."""
    assert len(namespace["names"]) == result.index_size == MAX_INDEX_TOKENS
    assert [line.split(" ")[0] for line in lines] == [n.token for n in result.neighbours]
    assert [float(line.split(" ")[1]) for line in lines] == [round(n.cosine, 4) for n in result.neighbours]


def _same_attribution(lines: list[str], namespace: dict, result) -> None:
    """The snippet explained the view's target id and printed the view's integrated gradients."""
    assert namespace["target"] == result.target_id
    printed = ast.literal_eval(lines[0])
    assert [t for t, _ in printed] == result.tokens
    np.testing.assert_allclose([s for _, s in printed], result.scores["integrated gradients"], atol=1e-4)
    total, gap = lines[1].replace("sum of attributions:", "").split("f(input) - f(baseline):")
    assert float(gap) == round(result.prob - result.baseline_prob, 4)
    assert float(total) == pytest.approx(result.ig_sum, abs=1e-4)


NEIGHBOUR_TEXT = "We sat on the bank of the river."


def test_neighbours_snippet_prints_the_views_neighbours(tiny_mlm_dir, tiny_loaded):
    """The pair the page produces: the code panel's snippet and the view, each with the tab's arguments only."""
    lines, namespace = run(word_code.neighbours_code(str(tiny_mlm_dir), NEIGHBOUR_TEXT, 5, 1, 5))
    _same_neighbours(lines, namespace, corpus_neighbours.neighbours(tiny_loaded, NEIGHBOUR_TEXT, 5, 1, 5))


def test_attribution_snippet_prints_the_views_scores(tiny_mlm_dir, tiny_loaded):
    lines, namespace = run(word_code.attribution_code(str(tiny_mlm_dir), MASKED, 1, "mat", 20))
    _same_attribution(lines, namespace, attribution.attribute(tiny_loaded, MASKED, 1, "mat",
                                                              ("integrated gradients",), 20))


def _byte_level_tokenizer(folder) -> RobertaTokenizer:
    """A RoBERTa-style byte-level BPE tokenizer trained on a few sentences: no segments, a space is 'Ġ'."""
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    text = [MASKED.replace("[MASK]", "mat"), NEIGHBOUR_TEXT]
    bpe.train_from_iterator(text * 3, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    return RobertaTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))


@pytest.fixture(scope="module", params=["roberta", "distilbert"])
def other_family(request, tmp_path_factory):
    """(folder, loaded): a tiny random masked LM of another family offered on the page, saved with its own
    kind of tokenizer (RoBERTa: byte-level BPE; DistilBERT: WordPiece; neither returns segments)."""
    folder = tmp_path_factory.mktemp(request.param)
    torch.manual_seed(0)
    if request.param == "roberta":
        tok = _byte_level_tokenizer(folder)
        model = RobertaForMaskedLM(RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                                 num_attention_heads=2, intermediate_size=64,
                                                 max_position_embeddings=66, pad_token_id=tok.pad_token_id))
    else:
        tok = DistilBertTokenizer.from_pretrained(str(embedded.tokenizer_dir()))
        model = DistilBertForMaskedLM(DistilBertConfig(vocab_size=len(tok), dim=32, n_layers=2, n_heads=2,
                                                       hidden_dim=64, max_position_embeddings=64,
                                                       pad_token_id=tok.pad_token_id))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    assert "token_type_ids" not in tok("a b")  # the shape that made the segment-reading snippet fail
    return folder, load_masked_lm(str(folder), "cpu")


def test_attribution_snippet_prints_the_views_scores_on_other_families(other_family):
    folder, loaded = other_family
    lines, namespace = run(word_code.attribution_code(str(folder), MASKED, 1, "mat", 20))
    result = attribution.attribute(loaded, MASKED, 1, "mat", ("integrated gradients",), 20)
    mid_sentence = "Ġmat" if loaded.model.config.model_type == "roberta" else "mat"
    assert loaded.tokenizer.convert_ids_to_tokens(result.target_id) == mid_sentence
    _same_attribution(lines, namespace, result)


def test_neighbours_snippet_prints_the_views_neighbours_on_other_families(other_family):
    folder, loaded = other_family
    lines, namespace = run(word_code.neighbours_code(str(folder), NEIGHBOUR_TEXT, 5, 1, 5))
    _same_neighbours(lines, namespace, corpus_neighbours.neighbours(loaded, NEIGHBOUR_TEXT, 5, 1, 5))


def test_the_default_sense_lines_are_two_of_each_sense():
    lines = sense_sets.default_lines("bank").splitlines()
    assert len(lines) == 4 and [line.split(" | ")[0] for line in lines] == ["river", "river", "money", "money"]
    assert len(sense_sets.examples()) == 96 and sum(e.train for e in sense_sets.examples()) == 36


def test_the_learn_steps_answer_with_the_views_numbers(tiny_loaded):
    from bertdemo.learn import path as learn_path

    static = learn_path.answer(tiny_loaded, "static-dynamic", "The cat sat on the mat.")
    view = word_in_context.similarities(tiny_loaded, "bank", sense_sets.default_lines("bank"))
    assert static.numbers == word_in_context.as_plain(view) and static.tab == "words"
    assert f"cosine **{view.static_cosine:.2f}**" in static.answer and "WORD, SENTENCES = 'bank'" in static.code
    why = learn_path.answer(tiny_loaded, "why-word", "The cat sat on the mat.")
    ref = attribution.attribute(tiny_loaded, "The cat sat on the [MASK].", 1, "mat", ("integrated gradients",))
    assert why.numbers == attribution.as_plain(ref) and why.tab_text == "The cat sat on the [MASK]."
    assert f"completeness gap **{ref.completeness_gap:.1f}%**" in why.answer
