"""The default probes can come right early; plateau detection; the timeline events of a run."""

from __future__ import annotations

import numpy as np
import pytest

from bertdemo.pretrain.metrics import MetricsBuffer, metrics_csv
from bertdemo.pretrain.probes import DEFAULT_PROBES, answers_alike, tracked_probes, validate_expected


def test_each_default_probe_is_decided_by_its_neighbours_in_the_embedded_corpus():
    """The guesser that uses both neighbours has the expected word in its top 5; word frequency does not."""
    from transformers import AutoTokenizer

    from bertdemo.models.embedded import tokenizer_dir, wiki_summaries
    from bertdemo.pretrain.data import pack_stream
    from bertdemo.pretrain.landmarks import count_ngrams

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    ids = [i for doc in tok(wiki_summaries(), add_special_tokens=False)["input_ids"] for i in [*doc, tok.sep_token_id]]
    blocks = pack_stream(np.asarray(ids), 128, tok.cls_token_id, tok.sep_token_id, np.int64)
    counts = count_ngrams(blocks, len(tok), tok.all_special_ids)
    unigram_top5 = set(np.argsort(-counts.p_unigram())[:5].tolist())
    assert len(DEFAULT_PROBES) >= 5
    for text, expected in DEFAULT_PROBES:
        enc = tok(text)["input_ids"]
        gap = enc.index(tok.mask_token_id)
        assert enc.count(tok.mask_token_id) == 1 and len(tok.tokenize(expected)) == 1, text
        word = tok.convert_tokens_to_ids(expected)
        both = counts.distribution(left=enc[gap - 1], right=enc[gap + 1])["both"]
        assert word in np.argsort(-both)[:5].tolist(), text
        assert word not in unigram_top5, text


def test_answers_alike_means_the_same_top_words_for_every_probe():
    same = [["the", ",", ".", "of", "and"]] * 5
    assert answers_alike(same)
    assert answers_alike([["the", ",", ".", "of", "in"], *same[1:]])  # one word differs: still alike
    learned = [["in", "at", "near", "from", ","], ["was", "is", "became", "had", "has"],
               ["states", "kingdom", "nations", "republic", "union"], ["york", "jersey", "zealand", "orleans", "delhi"],
               ["war", "cup", "series", "championship", "bank"]]
    assert not answers_alike(learned)
    assert not answers_alike(same[:2])  # two probes say too little


def test_the_expected_word_is_one_bounded_word_and_the_learners_probe_joins_the_defaults():
    from bertdemo.limits import MAX_EXPECTED_CHARS

    assert validate_expected("  in ") == "in" and validate_expected("") == ""
    with pytest.raises(ValueError, match="one word"):
        validate_expected("in London")
    with pytest.raises(ValueError, match=f"at most {MAX_EXPECTED_CHARS}"):
        validate_expected("x" * (MAX_EXPECTED_CHARS + 1))
    probes = tracked_probes("Paris is the [MASK] of France.", "capital")
    assert probes[:-1] == [(t, e, False) for t, e in DEFAULT_PROBES]
    assert probes[-1] == ("Paris is the [MASK] of France.", "capital", True)
    assert tracked_probes(*DEFAULT_PROBES[0]) == [(t, e, False) for t, e in DEFAULT_PROBES]  # not twice


def answers(ranks: dict[str, int], top5: list[str]) -> list[tuple]:
    return [(f"{word} [MASK].", word, False, [(t, 0.1) for t in top5], rank) for word, rank in ranks.items()]


def test_the_timeline_records_each_landmark_crossing_and_each_probe_arrival_once():
    buffer = MetricsBuffer()
    buffer.update(landmarks={"uniform": 10.3, "unigram": 7.0, "left": 5.6, "both": 4.9})
    common = ["the", ",", ".", "of", "and"]
    buffer.log_eval(0, 10.4, 0.0, None, None, tokens=0, wall_s=0.0, top5=0.0, median_rank=15000.0)
    buffer.log_probe_ranks(0, answers({"in": 9000, "was": 12000, "york": 20000}, common))
    buffer.log_eval(50, 6.9, 0.05, None, None, tokens=100, wall_s=30.0, top5=0.2, median_rank=90.0)
    buffer.log_probe_ranks(50, answers({"in": 7, "was": 20, "york": 3000}, common), tokens=100, wall_s=30.0)
    assert buffer.snapshot().plateau  # the same words for every probe
    buffer.log_eval(100, 6.8, 0.06, None, None, tokens=200, wall_s=60.0, top5=0.21, median_rank=80.0)
    buffer.log_probe_ranks(100, answers({"in": 3, "was": 4, "york": 3000}, ["in", "was", "at", "is", "by"]),
                           tokens=200, wall_s=60.0)
    buffer.log_eval(150, 5.5, 0.1, None, None, tokens=300, wall_s=90.0, top5=0.3, median_rank=40.0)
    buffer.log_probe_ranks(150, answers({"in": 6, "was": 1, "york": 900}, ["in", "was", "at", "is", "by"]),
                           tokens=300, wall_s=90.0)
    snap = buffer.snapshot()
    assert [(e["kind"], e.get("landmark") or e.get("expected"), e["step"]) for e in snap.timeline] == [
        ("landmark", "unigram", 50), ("probe", "in", 100), ("probe", "was", 100), ("landmark", "left", 150)]
    assert snap.timeline[0]["wall_s"] == 30.0 and snap.timeline[0]["label"] == "knows which words are common"
    assert [t["ranks"] for t in snap.probe_tracks] == [[9000, 7, 3, 6], [12000, 20, 4, 1], [20000, 3000, 3000, 900]]
    rows = metrics_csv(snap).splitlines()
    header = rows[0].split(",")
    assert {"eval_loss", "mlm_acc", "top5_acc", "median_rank", "landmark_left", "rank of 'in' in 'in [MASK].'"} <= set(header)
    last = dict(zip(header, rows[-1].split(",")))
    assert (last["step"], last["top5_acc"], last["median_rank"], last["landmark_left"], last["rank of 'in' in 'in [MASK].'"]) == (
        "150", "0.3", "40", "5.6", "6")


def test_a_new_own_probe_starts_its_track_and_a_long_run_keeps_its_whole_span():
    from bertdemo.pretrain.metrics import PROBE_POINTS

    buffer = MetricsBuffer()
    buffer.log_probe_ranks(0, [("A [MASK].", "a", True, [("x", 0.5)], 10)])
    buffer.log_probe_ranks(1, [("B [MASK].", "b", True, [("x", 0.5)], 20)])
    assert buffer.snapshot().probe_tracks == [{"text": "B [MASK].", "expected": "b", "own": True, "ranks": [None, 20],
                                               "top5": [("x", 0.5)]}]
    for step in range(2, PROBE_POINTS + 5):
        buffer.log_probe_ranks(step, [("B [MASK].", "b", True, [("x", 0.5)], step)])
    snap = buffer.snapshot()
    assert len(snap.probe_steps) <= PROBE_POINTS and snap.probe_steps[0] == 0 and snap.probe_steps[-1] == PROBE_POINTS + 4
    assert snap.probe_tracks[0]["ranks"][-1] == PROBE_POINTS + 4 and len(snap.probe_tracks[0]["ranks"]) == len(snap.probe_steps)


def test_a_line_break_in_a_probe_is_refused_and_never_splits_the_csv_header():
    """A bare CR in the probe put unquoted lines (``=cmd|…``, ``@SUM(…)``) into the metrics CSV's header."""
    import csv
    import io

    from bertdemo.pretrain.config import validate_probe_text

    hostile = "Paris is the [MASK] of France.\r=cmd|' /C calc'!A0\r@SUM(1+1)"
    for bad in (hostile, "a [MASK]\nb", "a [MASK]\u2028b", "a [MASK]\x00b"):
        with pytest.raises(ValueError, match="one line of printable text"):
            validate_probe_text(bad)
    assert validate_probe_text("  Il était [MASK] à Paris – 東京.  ") == "Il était [MASK] à Paris – 東京."
    buffer = MetricsBuffer()  # a run that kept such a probe before it was refused
    buffer.log_probe_ranks(0, [(hostile, "capital", True, [("x", 0.5)], 900)])
    buffer.log_probe_ranks(10, [(hostile, "capital", True, [("x", 0.5)], 7)])
    text = metrics_csv(buffer.snapshot())
    rows = list(csv.reader(io.StringIO(text)))
    assert len(text.splitlines()) == len(rows) == 3 and {len(r) for r in rows} == {len(rows[0])}
    assert rows[0][-1] == "rank of 'capital' in 'Paris is the [MASK] of France. =cmd|' /C calc'!A0 @SUM(1+1)'"
    assert [r[-1] for r in rows[1:]] == ["900", "7"]
