"""Corpus packing and the on-disk block cache of bertdemo.pretrain.data / corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest
from transformers import AutoTokenizer

from bertdemo.models.embedded import tokenizer_dir, wiki_summaries
from bertdemo.pretrain.data import pack_at_text_starts, prepare_blocks


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(str(tokenizer_dir()))


@pytest.fixture()
def corpus_jsonl(tmp_path):
    path = tmp_path / "small.jsonl"
    path.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[:200]), encoding="utf-8")
    return path


def test_packed_blocks_have_no_padding_and_cache_hits(tmp_path, tokenizer, corpus_jsonl) -> None:
    seen: list[tuple[float, str]] = []
    cache = tmp_path / "cache"
    first = prepare_blocks(str(corpus_jsonl), tokenizer, 32, cache, progress=lambda f, m: seen.append((f, m)))
    assert not first.cache_hit and seen[-1][0] == 1.0 and any("Tokenizing" in m for _, m in seen)
    assert first.train.dtype == np.uint16 and first.train.shape[1] == 32
    blocks = np.concatenate([first.train, first.heldout])
    assert (blocks != tokenizer.pad_token_id).all(), "packed blocks hold no padding"
    assert (blocks[:, 0] == tokenizer.cls_token_id).all() and (blocks[:, -1] == tokenizer.sep_token_id).all()
    assert len(first.heldout) >= 4 and len(first.train) > 10 * len(first.heldout) // 2
    # held-out blocks are the tail of the stream: disjoint positions, different content
    train_rows = {row.tobytes() for row in first.train}
    assert not any(row.tobytes() in train_rows for row in first.heldout)
    assert not list(cache.glob("*.tmp")) and not list(cache.glob(".*.tmp"))
    second = prepare_blocks(str(corpus_jsonl), tokenizer, 32, cache)
    assert second.cache_hit
    assert np.array_equal(first.train, second.train) and np.array_equal(first.heldout, second.heldout)
    # another block length or changed file content is another cache entry
    assert not prepare_blocks(str(corpus_jsonl), tokenizer, 64, cache).cache_hit
    corpus_jsonl.write_text(json.dumps({"text": " ".join(wiki_summaries()[300:400])}), encoding="utf-8")
    assert not prepare_blocks(str(corpus_jsonl), tokenizer, 32, cache).cache_hit


def test_stream_matches_tokenizer(tmp_path, tokenizer) -> None:
    texts = wiki_summaries()[:40]
    path = tmp_path / "c.txt"
    path.write_text("\n\n".join(texts), encoding="utf-8")
    out = prepare_blocks(str(path), tokenizer, 64, tmp_path / "cache")
    stream = np.concatenate([out.train, out.heldout])[:, 1:-1].reshape(-1)
    expected = []
    for t in texts:
        expected += tokenizer(" ".join(t.split()), add_special_tokens=False)["input_ids"] + [tokenizer.sep_token_id]
    assert stream.tolist() == expected[: len(stream)]


def test_bad_corpora_raise_clear_errors(tmp_path, tokenizer) -> None:
    with pytest.raises(ValueError, match="Unknown corpus"):
        prepare_blocks(str(tmp_path / "missing.txt"), tokenizer, 32, tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "no text"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match='no "text"'):
        prepare_blocks(str(bad), tokenizer, 32, tmp_path)
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("Just a few words.", encoding="utf-8")
    with pytest.raises(ValueError, match="only 0 blocks"):
        prepare_blocks(str(tiny), tokenizer, 32, tmp_path)


def test_tinystories_offline_is_refused(monkeypatch, tmp_path, tokenizer, capsys) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(ValueError, match="unreachable"):  # datasets' own offline error, said plainly
        prepare_blocks("tinystories", tokenizer, 32, tmp_path)
    from bertdemo.pretrain import __main__ as cli

    # the command line asks the hub before anything is made (datasets would retry for half a minute)
    assert cli.main(["--out", str(tmp_path / "out"), "--corpus", "tinystories", "--no-progress"]) == 2
    assert "the dataset hub is unreachable" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_hub_dataset_path_streams_a_local_dataset_folder(tmp_path) -> None:
    """The TinyStories loader's `datasets` streaming path, exercised on a local dataset folder."""
    from bertdemo.pretrain.data import hf_dataset_docs

    folder = tmp_path / "stories"
    folder.mkdir()
    stories = ["Once upon a time there was a cat.", "", "The dog ran to the park."]
    (folder / "train.jsonl").write_text("\n".join(json.dumps({"text": s}) for s in stories) + "\n")
    assert list(hf_dataset_docs(str(folder))) == [stories[0], stories[2]]


def test_blocks_that_begin_at_a_texts_start_hold_every_text_whole_in_order() -> None:
    """``pack_at_text_starts``: each block's body begins with a text's first token; a text that does not fit ends the
    block with its beginning and begins the next one whole; a text longer than a body runs on; nothing is padded."""
    sep, cls = 3, 2
    texts = [np.array([*range(100 * k, 100 * k + n), sep]) for k, n in enumerate((2, 4, 3, 1, 9, 2, 5, 3), start=1)]
    blocks, repeats = pack_at_text_starts(texts, 8, cls, sep, np.int64)  # bodies of 6 tokens
    bodies = blocks[:, 1:-1].tolist()
    assert (blocks[:, 0] == cls).all() and (blocks[:, -1] == sep).all()
    assert bodies == [[100, 101, sep, 200, 201, 202],     # text 2 does not fit: its beginning ends the block …
                      [200, 201, 202, 203, sep, 300],     # … and it begins the next, whole
                      [300, 301, 302, sep, 400, sep],
                      [500, 501, 502, 503, 504, 505],     # longer than a body: it runs on
                      [506, 507, 508, sep, 600, 601],
                      [600, 601, sep, 700, 701, 702],
                      [700, 701, 702, 703, 704, sep]]     # text 8 alone is an incomplete block: dropped
    assert repeats.tolist() == [True, True, False, False, True, True, False]
    starts = {int(t[0]) for t in texts}
    assert [row[0] in starts for row in bodies] == [True, True, True, True, False, True, True]  # the run-on alone
    # each text once, in order: a block that repeats the next one's beginning, read up to its last [SEP]
    kept = [tok for row, again in zip(bodies, repeats, strict=True)
            for tok in (row[: len(row) - row[::-1].index(sep)] if again else row)]
    assert kept == [int(x) for t in texts[:7] for x in t]


def test_a_corpus_packed_at_text_starts_trains_no_held_out_token_and_has_its_own_cache(tmp_path, tokenizer,
                                                                                       corpus_jsonl) -> None:
    cache = tmp_path / "cache"
    anywhere = prepare_blocks(str(corpus_jsonl), tokenizer, 32, cache)
    text = prepare_blocks(str(corpus_jsonl), tokenizer, 32, cache, block_starts="text")
    assert not text.cache_hit and text.cache_path != anywhere.cache_path  # a cache of its own, the other's kept
    assert prepare_blocks(str(corpus_jsonl), tokenizer, 32, cache, block_starts="text").cache_hit
    assert prepare_blocks(str(corpus_jsonl), tokenizer, 32, cache).cache_path == anywhere.cache_path
    # sentences shorter than a block: every block begins at one's start, and no padding
    sentences = [s.split(". ")[0] + "." for s in wiki_summaries()[:400]]
    short = [s for s in sentences if len(tokenizer(s, add_special_tokens=False)["input_ids"]) <= 40]
    path = tmp_path / "sentences.jsonl"
    path.write_text("\n".join(json.dumps({"text": s}) for s in short), encoding="utf-8")
    packed = prepare_blocks(str(path), tokenizer, 64, cache, block_starts="text")
    blocks = np.concatenate([packed.train, packed.heldout])
    assert (blocks != tokenizer.pad_token_id).all() and (blocks[:, 0] == tokenizer.cls_token_id).all()
    first_tokens = {tokenizer(s, add_special_tokens=False)["input_ids"][0] for s in short}
    assert all(int(row[1]) in first_tokens for row in blocks) and len(blocks) > 20
    loose = prepare_blocks(str(path), tokenizer, 64, cache)  # cut anywhere: most blocks begin mid-sentence
    assert np.mean([int(row[1]) in first_tokens for row in loose.train]) < 0.6
    # the first held-out sentence is not repeated at the end of the last training block: that block, which held its
    # beginning, was dropped
    texts = [np.array(tokenizer(s, add_special_tokens=False)["input_ids"] + [tokenizer.sep_token_id]) for s in short]
    every, repeats = pack_at_text_starts(texts, 64, tokenizer.cls_token_id, tokenizer.sep_token_id, np.int64)
    assert repeats[len(every) - len(packed.heldout) - 1] and len(packed.train) == len(every) - len(packed.heldout) - 1
    assert np.array_equal(packed.train, every[: len(packed.train)])
    head = list(packed.heldout[0, 1:-1])
    head = head[: head.index(tokenizer.sep_token_id) + 1]
    tail = list(packed.train[-1, 1:-1])
    assert not any(tail[-k:] == head[:k] for k in range(1, len(head) + 1))


def test_a_run_packs_its_corpus_as_its_recipe_says_and_refuses_another_choice(tmp_path, tokenizer,
                                                                             corpus_jsonl) -> None:
    from bertdemo.pretrain import __main__ as engine_cli
    from bertdemo.pretrain.checkpoints import latest_checkpoint
    from bertdemo.pretrain.metrics import MetricsBuffer
    from bertdemo.pretrain.trainer import run_training
    from tests.helpers import tiny_run_config

    cfg = tiny_run_config(str(corpus_jsonl), tmp_path, steps=4, block_starts="text")
    assert run_training(cfg, metrics=MetricsBuffer(), run_folder=tmp_path / "run") == "finished"
    cache = cfg.data.cache_dir  # the run's own packing is what the cache now holds
    assert prepare_blocks(str(corpus_jsonl), tokenizer, 32, cache, block_starts="text").cache_hit
    assert not prepare_blocks(str(corpus_jsonl), tokenizer, 32, cache).cache_hit
    saved = latest_checkpoint(tmp_path / "run") / "train_config.json"
    assert json.loads(saved.read_text(encoding="utf-8"))["data"]["block_starts"] == "text"  # what a measurement reads
    parsed = engine_cli.build_parser().parse_args(["--out", str(tmp_path / "x"), "--block-starts", "text"])
    assert parsed.block_starts == "text"
    with pytest.raises(ValueError, match="block_starts must be one of"):
        tiny_run_config(str(corpus_jsonl), tmp_path, block_starts="middle").validate()
