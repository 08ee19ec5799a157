"""The tool that gathers the twins' everyday text again from the repositories that keep copies of it: each copy's
format read into whole stories, a wrong decoding mended, a story read before left out, and every file recorded
with its commit and sha256 — tried on a repository made here."""

from __future__ import annotations

import hashlib
import json
import subprocess

import pytest

from bertdemo.tools import gather_everyday_text as gather


def test_each_copys_format_gives_its_whole_stories_and_drops_one_cut_off() -> None:
    marks = "Tom had a dog.\nThe dog ran.\n<|endoftext|>\nAnna sang.\n<|endoftext|>\nA story cut o"
    assert gather.stories_between_end_marks(marks) == ["Tom had a dog. The dog ran.", "Anna sang."]
    # a story a line, its paragraphs apart by an empty line (or one of spaces); a line that begins with a space
    # goes on its paragraph; the last story is kept only when the text ends with a line break
    lines = "tom had a dog.\n\nthe dog ran\n away.\n \nit came back.\nanna sang.\nthe last one, cut"
    assert gather.stories_of_blank_line_paragraphs(lines) == ["tom had a dog. the dog ran away. it came back.",
                                                               "anna sang."]
    assert gather.stories_of_blank_line_paragraphs("anna sang.\n")[-1] == "anna sang."
    assert gather.stories_of_json_texts(json.dumps({"texts": ["Tom had a dog.\nIt ran.", " ", 7]})) == [
        "Tom had a dog. It ran."]


def test_punctuation_read_as_windows_1252_is_written_back() -> None:
    right = "“Hi,” she said. It’s a dog – a big one… “Go!”"
    wrong = right.encode().decode("cp1252", errors="ignore")  # ” is E2 80 9D: Windows-1252 has no 0x9D, lost
    assert gather.mend_wrong_decoding(wrong) == right and wrong != right
    assert gather.mend_wrong_decoding("she said, â€œhi!â€ and ranâ€™s â€” onâ€¦") == "she said, “hi!” and ran’s — on…"
    assert gather.mend_wrong_decoding("plain text, no â€") == "plain text, no ”"
    assert gather.mend_wrong_decoding("“hiâ€â€™s") == "“hi”’s"  # a lost byte right before another mark


def test_a_story_read_before_in_any_case_or_in_part_is_left_out() -> None:
    first = gather.Source("a/one", "0" * 40, "s.txt", "end-marks")
    second = gather.Source("b/two", "1" * 40, "t.txt", "blank-line-paragraphs")
    kept, counts = gather.distinct_stories([
        (first, "Tom had a dog. The dog ran.\n<|endoftext|>\nAnna sang.\n<|endoftext|>\n"),
        (second, "tom had a dog. the dog ran.\nthe dog ran.\nben slept.\n")])
    assert kept == ["Tom had a dog. The dog ran.", "Anna sang.", "ben slept."]
    assert counts == [{"stories": 2, "new": 2}, {"stories": 3, "new": 1}]


def _git(folder, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(folder)}).stdout.strip()


def test_the_sources_are_read_at_their_commits_written_and_recorded(tmp_path, monkeypatch) -> None:
    repo = tmp_path / "copy"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "data").mkdir()
    pairs = "The dog barked.\tLe chien a aboyé.\nThank you.\tMerci.\n"
    (repo / "data" / "fra.txt").write_text(pairs, encoding="utf-8")
    (repo / "stories.txt").write_bytes(b"Tom had a dog.\r\nIt ran.\r\n<|endoftext|>\r\n")  # Windows line ends
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "copies")
    commit = _git(repo, "rev-parse", "HEAD")
    (repo / "data" / "fra.txt").write_text("changed after the commit\tx\n", encoding="utf-8")  # read at the commit
    monkeypatch.setattr(gather, "TATOEBA", (gather.Source("me/copy", commit, "data/fra.txt", "pairs", "fra.txt"),
                                            gather.Source("me/copy", commit, "data/deu.txt", "pairs", "deu.txt")))
    monkeypatch.setattr(gather, "STORIES", (gather.Source("me/copy", commit, "stories.txt", "end-marks"),))
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="missing: me/copy"):
        gather.gather(out, {})
    with pytest.raises(ValueError, match="is no clone of me/copy holding commit"):
        gather.gather(out, {"me/copy": tmp_path / "nowhere"})
    clones = gather.parse_clones([f"me/copy={repo / '.git'}"])
    (out / "tatoeba").mkdir(parents=True)
    (out / "tatoeba" / "old.txt").write_text("from an earlier gathering\tx\n", encoding="utf-8")
    with pytest.raises(ValueError, match="1 source file.s. absent from their clones"):
        gather.gather(out, clones, log=lambda line: None)  # deu.txt is not in the commit
    said: list[str] = []
    record = gather.gather(out, clones, log=said.append, allow_missing=True)
    assert sorted(p.name for p in (out / "tatoeba").iterdir()) == ["fra.txt"]  # the earlier gathering's file gone
    assert (out / "tatoeba" / "fra.txt").read_text(encoding="utf-8") == pairs
    assert (out / "stories.txt").read_text(encoding="utf-8") == "Tom had a dog. It ran.\n"
    assert record["tatoeba"][0]["sha256"] == hashlib.sha256(pairs.encode()).hexdigest()
    assert record["absent"] == ["me/copy:data/deu.txt"] and said[0] == "absent from its clone, left out: me/copy:data/deu.txt"
    assert json.loads((out / "SOURCES.json").read_text(encoding="utf-8")) == record
    assert record["stories"][0] | {"stories": 1, "new": 1} == record["stories"][0]
    with pytest.raises(ValueError, match="OWNER/NAME=GITDIR"):
        gather.parse_clones(["me-copy"])
