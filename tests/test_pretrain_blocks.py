"""Corpus packing and the on-disk block cache of bertdemo.pretrain.data / corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest
from transformers import AutoTokenizer

from bertdemo.models.embedded import tokenizer_dir, wiki_summaries
from bertdemo.pretrain.data import prepare_blocks


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
