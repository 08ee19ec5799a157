"""Masked LM beside left-to-right LM (bertdemo.explore.twins): every number is the models' own forward, the
left-to-right model never reads past the blank, and the right-context cloze set is what it claims."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import BertForMaskedLM, BertLMHeadModel

from bertdemo.explore import twins
from bertdemo.pretrain.heldout import IGNORE_INDEX, heldout_questions
from bertdemo.pretrain.landmarks import count_ngrams
from bertdemo.viz.twins import cloze_markdown, heldout_markdown
from tests.helpers import summary_blocks, tiny_bert_config


@pytest.fixture(scope="module")
def pair(tokenizer):
    torch.manual_seed(0)
    mlm = BertForMaskedLM(tiny_bert_config()).eval()
    torch.manual_seed(1)
    ltr = BertLMHeadModel(tiny_bert_config(is_decoder=True)).eval()
    return twins.Twin("tiny-mlm", mlm, tokenizer), twins.Twin("tiny-ltr", ltr, tokenizer)


@pytest.fixture(scope="module")
def blocks(tokenizer):
    """Packed blocks of 64 from embedded summaries: (train, held-out), as prepare_blocks makes them."""
    return summary_blocks(tokenizer)


def test_the_right_context_cloze_set(tokenizer):
    items = twins.read_right_context_cloze()
    assert len(items) >= 50
    assert len({it.sentence for it in items}) == len(items)
    for it in items:
        assert it.sentence.count("[MASK]") == 1, it.sentence
        assert len(tokenizer(it.answer, add_special_tokens=False)["input_ids"]) == 1, it.answer
        assert it.answer in tokenizer.get_vocab(), it.answer
        assert it.sentence.split("[MASK]")[1].strip(" .") != "", it.sentence  # words after the blank


def test_objectives_and_the_pair_check(pair):
    mlm, ltr = pair
    assert (mlm.objective, ltr.objective) == ("mlm", "ltr")
    assert mlm.label == "tiny-mlm (masked LM)" and ltr.label == "tiny-ltr (left-to-right LM)"
    with pytest.raises(ValueError, match="masked LM, not a left-to-right"):
        twins.check_pair(mlm, mlm)
    with pytest.raises(ValueError, match="is a left-to-right model"):
        twins.check_pair(ltr, ltr)


def test_cloze_ranks_are_the_models_own(pair, tokenizer):
    mlm, ltr = pair
    items = twins.read_right_context_cloze()[:6]
    result = twins.cloze_ranks([mlm, ltr], items)
    for k, it in enumerate(items):
        enc = tokenizer(it.sentence, return_tensors="pt")
        blank = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0])
        target = tokenizer.convert_tokens_to_ids(it.answer)
        with torch.no_grad():
            m = mlm.model(**enc).logits[0, blank]
            l = ltr.model(**enc).logits[0, blank - 1]  # the output before the blank predicts it
        assert result.ranks["tiny-mlm"][k] == int((m > m[target]).sum()) + 1
        assert result.ranks["tiny-ltr"][k] == int((l > l[target]).sum()) + 1
        assert result.first_guess["tiny-ltr"][k] == tokenizer.convert_ids_to_tokens(int(l.argmax()))
    r = np.asarray(result.ranks["tiny-mlm"], dtype=float)
    assert result.summary("tiny-mlm") == pytest.approx({"mrr": (1 / r).mean(), "top1": (r == 1).mean(),
                                                        "top5": (r <= 5).mean(), "median_rank": np.median(r)})
    # the page says who ranks the right word better sentence by sentence, counted from these ranks
    better = sum(a < b for a, b in zip(result.ranks["tiny-mlm"], result.ranks["tiny-ltr"]))
    worse = sum(a > b for a, b in zip(result.ranks["tiny-mlm"], result.ranks["tiny-ltr"]))
    said = cloze_markdown(result)
    assert f"**tiny-mlm** ranks the right word better on **{better} of 6**, tiny-ltr on {worse}" in said


def test_a_first_guess_that_is_a_special_token_is_said_in_words():
    from bertdemo.models.twin_curve import listed

    assert listed([("[SEP]", 8), ("the", 3), ("[CLS]", 1)], 61) == (
        "`[SEP]` (the text ends: 8 of 61), `the` (3), `[CLS]` (a block starts: 1)")


def test_the_cloze_says_in_words_which_columns_the_left_to_right_model_leads_and_where_its_left_side_suffices():
    items = [twins.ClozeItem(f"The [MASK] did {k}.", w) for k, w in enumerate(("dog", "cat", "teeth", "owl"))]
    objectives = {"m": "mlm", "l": "ltr"}
    leads_first = twins.ClozeRanks(["m", "l"], objectives, items, {"m": [3, 2, 50, 8], "l": [1, 40, 4, 900]},
                                   {"m": ["a"] * 4, "l": ["dog", "x", "y", "z"]})
    said = cloze_markdown(leads_first)
    # MRR (1 + 1/40 + 1/4 + 1/900) / 4 against (1/3 + 1/2 + 1/50 + 1/8) / 4; top-1 1 of 4 against 0; top-5 2 and 2
    # (a tie: not named); the median 22 against 5.5 (the masked LM's)
    assert ("l (left-to-right) is ahead on mean reciprocal rank (0.319 against 0.245), top-1 (25.0% against 0.0%). "
            "Top-1, top-5 and the mean reciprocal rank weigh a model's first guesses, which a few sentences decide: "
            "the right word comes first on 0 sentences for the masked LM and 1 for the left-to-right model, in the "
            "first five on 2 and 2.") in said
    assert "The median rank is the middle sentence's" not in said  # the masked LM's median is the better one
    # a lead on the median alone is said as what the median is, not as first guesses
    middle = twins.ClozeRanks(["m", "l"], objectives, items + [items[0]], {"m": [1, 1, 100, 100, 100],
                              "l": [50] * 5}, {"m": ["a"] * 5, "l": ["b"] * 5})
    said_middle = cloze_markdown(middle)
    assert "l (left-to-right) is ahead on median rank (50 against 100). The median rank is the middle sentence's" in said_middle
    assert "weigh a model's first guesses" not in said_middle
    assert ("On 2 sentences the left-to-right model has the right word in its top 5 from the words before the blank "
            "alone (<code>dog</code>, <code>teeth</code>)") in said
    behind = twins.ClozeRanks(["m", "l"], objectives, items, {"m": [1, 2, 3, 4], "l": [9, 40, 60, 900]},
                              {"m": ["dog"] * 4, "l": ["x"] * 4})
    said = cloze_markdown(behind)
    assert "is ahead on" not in said and "in its top 5 from the words before" not in said


def test_asked_as_a_texts_start_each_model_reads_a_sep_after_cls_and_nothing_else_changes(pair, blocks, tokenizer):
    """``text_start``: each sentence read ``[CLS] [SEP] words [SEP]``, as the engine's packed blocks show a text's
    start; the ranks and the held-out losses are the models' own forward on exactly that input."""
    mlm, ltr = pair
    items = twins.read_right_context_cloze()[:4]
    result = twins.cloze_ranks([mlm, ltr], items, text_start=True)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    for k, it in enumerate(items):
        ids = tokenizer(it.sentence, return_tensors="pt")["input_ids"][0].tolist()
        fair = torch.tensor([[cls, sep, *ids[1:]]])
        blank = fair[0].tolist().index(tokenizer.mask_token_id)
        target = tokenizer.convert_tokens_to_ids(it.answer)
        with torch.no_grad():
            m, l = mlm.model(input_ids=fair).logits[0, blank], ltr.model(input_ids=fair).logits[0, blank - 1]
        assert result.ranks["tiny-mlm"][k] == int((m > m[target]).sum()) + 1
        assert result.ranks["tiny-ltr"][k] == int((l > l[target]).sum()) + 1
    assert result.ranks != twins.cloze_ranks([mlm, ltr], items).ranks  # the [SEP] is read
    _train, heldout = blocks
    page = twins.heldout_losses([mlm, ltr], heldout[:3])
    fair = twins.heldout_losses([mlm, ltr], heldout[:3], text_start=True)
    counts = count_ngrams(_train, len(tokenizer), tokenizer.all_special_ids)
    by_position = twins.heldout_by_position(mlm, ltr, heldout, counts, max_blocks=3)
    assert page["tiny-ltr"]["overall"] == pytest.approx(by_position.overall["tiny-ltr"], abs=1e-6)
    assert page["tiny-mlm"]["by_position"][0] == pytest.approx(by_position.loss["tiny-mlm"][0], abs=1e-6)
    # every question by hand, each sentence read [CLS] [SEP] words [SEP]: the masked LM with the word alone hidden,
    # the left-to-right LM from its output before the word
    asked = twins.heldout_asked(tokenizer, heldout[:3])
    sentences, questions = twins._joined(asked.questions)
    m_nll, l_nll = [], []
    for s, i in questions:
        fair_input = torch.as_tensor(twins.as_text_start(sentences[s], sep))[None]
        assert fair_input[0, :2].tolist() == [cls, sep] and fair_input[0, i + 1] == sentences[s][i]
        word = torch.tensor([int(sentences[s][i])])
        masked = fair_input.clone()
        masked[0, i + 1] = tokenizer.mask_token_id
        with torch.no_grad():
            m_nll.append(float(F.cross_entropy(mlm.model(input_ids=masked).logits[0, i + 1][None], word)))
            l_nll.append(float(F.cross_entropy(ltr.model(input_ids=fair_input).logits[0, i][None], word)))
    assert fair["tiny-mlm"]["overall"] == pytest.approx(np.mean(m_nll), abs=1e-5)
    assert fair["tiny-ltr"]["overall"] == pytest.approx(np.mean(l_nll), abs=1e-5)
    firsts = [k for k, p in enumerate(asked.positions) if p == 1]
    assert fair["tiny-ltr"]["by_position"][0] == pytest.approx(np.mean([l_nll[k] for k in firsts]), abs=1e-5)


def test_the_left_to_right_model_reads_only_the_words_before_the_blank(pair):
    mlm, ltr = pair
    a = twins.side_by_side([mlm, ltr], "The [MASK] barked at the mailman.", top_k=5)
    b = twins.side_by_side([mlm, ltr], "The [MASK] meowed at the moon all night.", top_k=5)
    assert [g.name for g in a] == ["tiny-mlm", "tiny-ltr"]
    assert a[1].top == b[1].top  # bit-identical: nothing after the blank reaches it
    assert a[0].top != b[0].top  # the masked LM reads the right side
    assert "only the words before the blank" in a[1].read and "The" in a[1].read
    assert "both sides" in a[0].read
    assert sum(p for _t, p in a[0].top) < 1.0 and a[0].top[0][1] >= a[0].top[-1][1]


def test_a_special_token_is_never_offered_as_a_word_for_the_blank(tokenizer):
    """The left-to-right twin offered "[SEP]" for a blank (issue 54): its head made to favour [SEP] and [CLS] most,
    the list still holds words alone, each with the probability the model gives it."""
    torch.manual_seed(1)
    ltr = BertLMHeadModel(tiny_bert_config(is_decoder=True)).eval()
    with torch.no_grad():
        ltr.cls.predictions.bias[[tokenizer.sep_token_id, tokenizer.cls_token_id]] = 50.0
    (guesses,) = twins.side_by_side([twins.Twin("tiny-ltr", ltr, tokenizer)], "The [MASK] barked.", top_k=5)
    assert not {t for t, _ in guesses.top} & set(tokenizer.all_special_tokens) and len(guesses.top) == 5
    probs = twins.blank_logits(twins.Twin("tiny-ltr", ltr, tokenizer), ["The [MASK] barked."]).softmax(-1)[0]
    assert [p for _, p in guesses.top] == pytest.approx(
        probs[tokenizer.convert_tokens_to_ids([t for t, _ in guesses.top])].tolist())
    assert sum(p for _, p in guesses.top) < 0.01  # the specials hold nearly all of it: shown as the model gives it


def test_a_blank_is_offered_only_pieces_that_can_stand_there_as_in_fill_mask(tokenizer):
    """Both twins answered "Le [MASK] est sur la table." with ##o, ##xic (learner walk): a blank that starts a word
    is offered no ## piece, a blank glued to letters only ## pieces (Fill-Mask's rule), each at the model's own
    probability."""
    torch.manual_seed(1)
    model = BertForMaskedLM(tiny_bert_config()).eval()
    pieces = [t for t in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer)))) if t.startswith("##")][:20]
    with torch.no_grad():
        model.cls.predictions.bias[tokenizer.convert_tokens_to_ids(pieces)] = 20.0  # the model favours ## pieces
    twin = twins.Twin("tiny-mlm", model, tokenizer)
    (start,) = twins.side_by_side([twin], "Le [MASK] est sur la table.", top_k=5)
    (glued,) = twins.side_by_side([twin], "She was play[MASK] outside.", top_k=5)
    assert not any(t.startswith("##") for t, _ in start.top), start.top
    assert all(t.startswith("##") for t, _ in glued.top), glued.top
    probs = twins.blank_logits(twin, ["Le [MASK] est sur la table."]).softmax(-1)[0]
    assert [p for _, p in start.top] == pytest.approx(probs[tokenizer.convert_tokens_to_ids([t for t, _ in start.top])].tolist())


@pytest.mark.parametrize("text, message", [
    ("No blank here.", "exactly one"), ("[MASK] and [MASK].", "exactly one"), ("", "Type a sentence"),
    # the Learn tab's way of hiding a word, typed here: the refusal writes the sentence this box takes
    ("The [dog] barked at the mailman.",
     "type “The \\[MASK\\] barked at the mailman.” and put “dog” in “The word you expect”"),
    ("The [dog] [SEP] barked.", "type “The \\[MASK\\] \\[SEP\\] barked.” and put “dog”"),
    ("The [dog] and the [cat].", "exactly one"), ("The [dog] and a [MASK] [MASK].", "exactly one"),
    ("The [dog] barked at [MASK].", "here the blank is the \\[MASK\\]: write “dog” without them")])
def test_side_by_side_refuses(pair, text, message):
    with pytest.raises(ValueError, match=message):
        twins.side_by_side(list(pair), text)


def test_sentence_spans():
    cls, sep, dot = 101, 102, 1012
    block = np.array([cls, 5, 6, dot, 7, 8, 9, dot, 10, sep, 11, 12, dot, 13, sep])
    # the block's first text is cut mid-sentence; "10" never ends; after [SEP] a new text starts
    assert twins.sentence_spans(block, {dot}, {cls, sep}) == [(4, 8), (10, 13)]
    # a block that opens with a text's start: its first sentence is whole, and asked too
    assert twins.sentence_spans(block, {dot}, {cls, sep}, opens_text=True) == [(1, 4), (4, 8), (10, 13)]


def test_which_packed_blocks_open_with_a_texts_start():
    cls, sep = 101, 102
    blocks = np.array([[cls, 5, 6, 7, 8, sep],  # a long text fills the body: it runs on into the next block
                       [cls, 9, 10, sep, 11, sep],  # ... which begins in its middle; this body ends it (a [SEP])
                       [cls, 11, 12, 13, 14, sep]])  # so this one begins with the next text, whole
    assert twins.blocks_opening_texts(blocks, sep, "text") == [True, False, True]
    assert twins.blocks_opening_texts(blocks, sep) == [False, False, False]  # cut anywhere: mid-text
    with pytest.raises(ValueError, match="block_starts must be one of"):
        twins.blocks_opening_texts(blocks, sep, "middle")


def test_heldout_by_position_is_the_models_own_loss(pair, blocks, tokenizer):
    mlm, ltr = pair
    train, heldout = blocks
    counts = count_ngrams(train, len(tokenizer), tokenizer.all_special_ids)
    result = twins.heldout_by_position(mlm, ltr, heldout, counts, max_blocks=3)
    assert result.blocks == 3 and sum(result.counts) == result.questions > 10
    assert result.series_order == ["tiny-mlm", "tiny-ltr", *twins.LANDMARK_SERIES.values()]
    # recompute every question by hand: the same fixed questions, in the same complete sentences
    q = heldout_questions(heldout[:3], tokenizer.all_special_ids, tokenizer.mask_token_id, max_tokens=3 * 64)
    vocab = tokenizer.get_vocab()
    ends = {vocab[e] for e in twins.SENTENCE_ENDS}
    m_nll, l_nll, both = [], [], []
    first_words = []
    for b, block in enumerate(heldout[:3]):
        for start, stop in twins.sentence_spans(block, ends, {tokenizer.cls_token_id, tokenizer.sep_token_id}):
            sent = torch.tensor([[tokenizer.cls_token_id, *block[start:stop], tokenizer.sep_token_id]])
            with torch.no_grad():
                ltr_logits = ltr.model(input_ids=sent).logits[0]
            for c in range(start, stop):
                if q.labels[b, c] == IGNORE_INDEX:
                    continue
                i, word = c - start + 1, int(block[c])
                masked = sent.clone()
                masked[0, i] = tokenizer.mask_token_id
                with torch.no_grad():
                    m = mlm.model(input_ids=masked).logits[0, i]
                m_nll.append(float(F.cross_entropy(m[None], torch.tensor([word]))))
                l_nll.append(float(F.cross_entropy(ltr_logits[i - 1][None], torch.tensor([word]))))
                both.append(-counts.log_probs(np.array([word]), np.array([int(sent[0, i - 1])]),
                                              np.array([int(sent[0, i + 1])]))["both"][0])
                if i == 1:
                    first_words.append(l_nll[-1])
    assert len(m_nll) == result.questions
    assert result.overall["tiny-mlm"] == pytest.approx(np.mean(m_nll), abs=1e-5)
    assert result.overall["tiny-ltr"] == pytest.approx(np.mean(l_nll), abs=1e-5)
    assert result.overall["both neighbours"] == pytest.approx(np.mean(both), abs=1e-9)
    assert result.counts[0] == len(first_words)
    assert first_words
    assert result.loss["tiny-ltr"][0] == pytest.approx(np.mean(first_words), abs=1e-5)
    weighted = sum(n * v for n, v in zip(result.counts, result.loss["tiny-mlm"]) if n)
    assert weighted / result.questions == pytest.approx(result.overall["tiny-mlm"], abs=1e-5)
    assert "nats" in result.winner_note()


def test_a_pair_that_has_not_learned_context_says_it_cannot_show_the_difference_yet():
    from bertdemo.explore.twins import LANDMARK_SERIES, HeldoutComparison
    from bertdemo.viz.twins import BOTH_NEIGHBOURS

    assert BOTH_NEIGHBOURS == LANDMARK_SERIES["both"]

    def compared(mlm: float, ltr: float) -> HeldoutComparison:
        overall = {"m": mlm, "l": ltr, LANDMARK_SERIES["unigram"]: 7.1, LANDMARK_SERIES["left"]: 5.66,
                   LANDMARK_SERIES["both"]: 5.11}
        return HeldoutComparison("m", "l", ["1"], [10], {k: [v] for k, v in overall.items()}, overall, 10, 2, 1)

    early = compared(6.90, 6.51)  # the numbers of a 300-step pair: both above the word-before line
    assert "Neither model beats the word-before guesser yet (5.66 nats)" in early.winner_note()
    assert "the left-to-right model lower by 0.39 nats per word" in early.winner_note()  # who is ahead, in words
    assert "the masked LM lower by 0.70 nats per word" in compared(5.2, 5.9).winner_note()
    assert compared(5.2, 5.9).training_note() == ""  # the masked LM reads context: nothing to add
    # a position band where the left-to-right model is lower is named with its size (a small band moves with the sample)
    assert "left-to-right model is lower at position 1 (10 words)" in heldout_markdown(early)
    assert "the masked LM is lower at every position band" in heldout_markdown(compared(5.2, 5.9))
    # a band where the both-neighbours guesser is lower than the masked LM is named too
    assert ("The both-neighbours guesser is lower than the masked LM at position 1 (10 words)"
            in heldout_markdown(early))
    assert "both-neighbours guesser is lower" not in heldout_markdown(compared(5.0, 5.9))
    assert compared(5.9, 5.5).training_note() == ""


def test_heldout_refuses_bad_sizes_and_charges_its_budget(pair, blocks, tokenizer):
    from bertdemo.request_budget import WorkBudget

    mlm, ltr = pair
    train, heldout = blocks
    counts = count_ngrams(train, len(tokenizer), tokenizer.all_special_ids)
    with pytest.raises(ValueError, match="between 1 and"):
        twins.heldout_by_position(mlm, ltr, heldout, counts, max_blocks=0)
    with pytest.raises(ValueError, match="Read fewer held-out blocks"):
        twins.heldout_by_position(mlm, ltr, heldout, counts, max_blocks=3, budget=WorkBudget(max_gflop=1e-6))


@pytest.fixture(scope="module")
def stored(tmp_path_factory, tokenizer):
    """A tiny masked LM and its left-to-right twin loaded as the app's model store loads them."""
    from bertdemo.models.store import load_masked_lm
    from tests.helpers import tiny_model_dir

    root = tmp_path_factory.mktemp("stored-twins")
    return (twins.twin_of(load_masked_lm(str(tiny_model_dir(BertForMaskedLM, root / "mlm", tokenizer)), "cpu")),
            twins.twin_of(load_masked_lm(str(tiny_model_dir(BertLMHeadModel, root / "ltr", tokenizer,
                                                            is_decoder=True)), "cpu")))


def test_the_held_out_corpus_is_read_and_counted_once_per_stored_model(stored, corpus, tmp_path):
    """The blocks and the n-gram counts are kept with the masked LM's store entry: a second comparison answers
    with the block cache gone from disk, and every number equals a comparison that reads the corpus afresh."""
    from dataclasses import asdict

    mlm, ltr = stored
    cache = tmp_path / "cache"
    first = twins.heldout_from_corpus(mlm, ltr, cache, max_blocks=2, corpus=corpus)
    assert any(str(k).startswith("held-out corpus") for k in mlm.loaded.cache("derived").keys())  # noqa: SIM118 - a ByteLRU
    for path in cache.iterdir():  # the block cache on disk goes: a second read would tokenize the corpus again
        path.unlink()
    second = twins.heldout_from_corpus(mlm, ltr, cache, max_blocks=4, corpus=corpus)
    assert not any(cache.iterdir())
    fresh = twins.heldout_from_corpus(twins.Twin(mlm.name, mlm.model, mlm.tokenizer),
                                      twins.Twin(ltr.name, ltr.model, ltr.tokenizer), tmp_path / "fresh",
                                      max_blocks=4, corpus=corpus)
    a, b = asdict(second), asdict(fresh)
    assert a.keys() == b.keys()
    for key in a:  # the kept losses of blocks read in another batch: equal to the last bits a batch may change
        if key in ("per_bucket", "overall"):
            for name in a[key]:
                np.testing.assert_allclose(a[key][name], b[key][name], rtol=1e-6, err_msg=f"{key} {name}")
        else:
            assert a[key] == b[key], key
    assert (first.blocks, second.blocks) == (2, 4) and second.questions > first.questions


def test_a_block_read_once_is_not_read_again_until_the_weights_change(stored, corpus, tmp_path):
    """Each model keeps its losses per held-out block (keyed by its weights and the block): a comparison over more
    blocks reads only the new ones, one over fewer reads nothing, and a weight changed in place reads again."""
    import torch

    mlm, ltr = stored
    rows = {"mlm": 0, "ltr": 0}
    hooks = [twin.model.base_model.register_forward_pre_hook(
        lambda _m, args, kwargs, kind=kind: rows.__setitem__(kind, rows[kind] + len(kwargs.get("input_ids", args[0]
                                                                                               if args else []))),
        with_kwargs=True) for kind, twin in (("mlm", mlm), ("ltr", ltr))]
    try:
        def read(blocks: int) -> tuple[int, int, int]:
            rows.update(mlm=0, ltr=0)
            result = twins.heldout_from_corpus(mlm, ltr, tmp_path, max_blocks=blocks, corpus=corpus)
            return result.questions, rows["mlm"], rows["ltr"]

        with torch.no_grad():
            mlm.model.bert.embeddings.word_embeddings.weight.add_(0.0)  # a new stamp: nothing kept from other tests
            ltr.model.bert.embeddings.word_embeddings.weight.add_(0.0)
        two, mlm_rows, ltr_rows = read(2)
        assert mlm_rows == two and ltr_rows > 0  # the masked LM: one input per question
        four, mlm_rows, ltr_rows = read(4)
        assert mlm_rows == four - two and ltr_rows > 0  # only blocks 3 and 4 read
        assert read(3)[1:] == (0, 0)  # every block kept by both models
        with torch.no_grad():
            ltr.model.bert.embeddings.word_embeddings.weight.add_(0.0)  # changed in place: its losses are stale
        _three, mlm_rows, ltr_rows = read(3)
        assert mlm_rows == 0 and ltr_rows > 0  # the left-to-right model reads its three blocks again
    finally:
        for hook in hooks:
            hook.remove()


def test_the_vocabulary_check_reads_a_digest_kept_with_the_stored_model(stored, tokenizer, tmp_path):
    from transformers import BertTokenizerFast

    mlm, ltr = stored
    assert mlm.vocabulary() == ltr.vocabulary() == twins.vocabulary_digest(tokenizer)
    assert "vocabulary digest" in mlm.loaded.cache("derived").keys()  # noqa: SIM118 - a ByteLRU
    twins.check_pair(mlm, ltr)
    vocab = [t for t, _ in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])]
    vocab[2000], vocab[2001] = vocab[2001], vocab[2000]  # two words swap ids: the same pieces, other ids
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    swapped = BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt"))
    with pytest.raises(ValueError, match="different vocabularies"):
        twins.check_pair(mlm, twins.Twin("other-ltr", ltr.model, swapped))


def test_the_side_by_side_bars_share_one_scale(pair):
    """Both models' panels on one scale: the bars compare across the models (each panel on its own scale drew a
    1.3 % bar as long as the other model's 2.1 %)."""
    from bertdemo.viz.twins import side_by_side_spec

    guesses = twins.side_by_side(list(pair), "The [MASK] barked at the mailman.", top_k=5)
    spec = side_by_side_spec(guesses)
    top = max(p for g in guesses for _t, p in g.top)
    assert spec["layout"]["xaxis"]["range"] == spec["layout"]["xaxis2"]["range"] == [0, pytest.approx(top / 0.7)]
