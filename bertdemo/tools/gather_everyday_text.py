"""The everyday text of the twins' mixed corpus, gathered again from the public repositories that keep copies of it.

Tatoeba's sentences (tatoeba.org) and the TinyStories dataset (the model hub) cannot be reached from the machines
this project is built on; copies of them committed to GitHub repositories can be cloned. This tool reads those
copies at the commits the twins' build used (``git show COMMIT:PATH`` in a clone of each repository, given as
``--repo OWNER/NAME=GITDIR``) and writes, under ``--out``:

* ``tatoeba/<language>.txt``: manythings.org's Tatoeba sentence-pair files (English, a tab, another language;
  CC-BY 2.0 France), as they are, for ``build_twin_pairs --tatoeba``;
* ``stories.txt``: TinyStories stories (Eldan & Li 2023, CDLA-Sharing-1.0), one a line (a story's paragraphs joined
  by a space, a wrong decoding such as ``â€œ`` mended, a story seen before in any case left out, a story cut off
  at a copy's end dropped), for ``build_twin_pairs --stories``;
* ``SOURCES.json``: each source's repository, commit, path, the sha256 of what was read and what it gave.

A source whose file a clone lacks (a shallow or partial clone) is named and left out; the counts in
``SOURCES.json`` then say what the corpus holds. ::

    python -m bertdemo.tools.gather_everyday_text --out runs/everyday-sources \\
        --repo dariofugale95/LanguageIdentificationKeras=CLONE --repo 13luoyu/Transformer-machine-translation=CLONE \\
        --repo gusjengis/toy-RNN=CLONE --repo Arnoochka/Transformer-Parallelism=CLONE --repo maxme1/tiny-stories=CLONE
    python -m bertdemo.tools.build_twin_pairs --work runs/twin-pairs-mixed --prepare \\
        --tatoeba runs/everyday-sources/tatoeba/*.txt --stories runs/everyday-sources/stories.txt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bertdemo import storage

LANGUAGE_IDENTIFICATION = ("dariofugale95/LanguageIdentificationKeras", "b3cfbab60bc3d0042003c9c28e3f60ed5c69f1ed")
# the sentence-pair files of that copy under 4 MiB (the larger ones, French, German, Spanish…, are not in it)
PAIR_LANGUAGES = ("ara", "bul", "cat", "ces", "cmn", "dan", "ell", "est", "fin", "hrv", "hun", "ind", "isl", "jpn",
                  "kor", "lit", "lvs", "nld", "nob", "pol", "ron", "slk", "slv", "srp", "swe", "tha", "vie", "zsm")
END_OF_TEXT = "<|endoftext|>"


@dataclass(frozen=True)
class Source:
    """One file of one repository at one commit, and how its text is read."""

    repo: str  # owner/name on GitHub
    commit: str
    path: str
    kind: str  # "pairs" (a Tatoeba file, kept as it is) or a story format of STORY_READERS
    name: str = ""  # the file written for a "pairs" source (the names, sorted, give the order the sentences are read in)


TATOEBA = tuple(Source(*LANGUAGE_IDENTIFICATION, f"data/{lang}.txt", "pairs", f"{lang}.txt")
                for lang in PAIR_LANGUAGES) + (
    Source("13luoyu/Transformer-machine-translation", "aa43963320ccfacebd1d3542deae559bbca58d03", "cmn.txt", "pairs",
           "cmn-2.txt"),)  # the names the twins' builds read them by, in the same order
STORIES = (
    # the train split's first 2 MiB: stories between end marks, a paragraph a line
    Source("gusjengis/toy-RNN", "e4c7ff8bba4ff7989e69a3a816ebe4b14813b41e", "data/tinystories_sample.txt",
           "end-marks"),
    # its first 4 MB, lowercased: a story a line, its paragraphs apart by an empty line
    Source("Arnoochka/Transformer-Parallelism", "911b9e732fbe6d228ba0feacbd6735395f0d279e", "tinystories.txt",
           "blank-line-paragraphs"),
    # 3,000 stories as a JSON list, a paragraph a line
    Source("maxme1/tiny-stories", "037e886f4ee35dca2c469b0da3638ebf2255e4cb", "frontend/src/assets/tiny-stories.json",
           "json-texts"),
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def stories_between_end_marks(text: str) -> list[str]:
    """The stories of a file that ends each with a line ``<|endoftext|>``; the part after the last mark (a story
    cut off where the copy ends) is dropped."""
    return [_one_line(s) for s in text.split(END_OF_TEXT)[:-1] if s.strip()]


def stories_of_blank_line_paragraphs(text: str) -> list[str]:
    """The stories of a file that keeps a story a line and its paragraphs apart by an empty line (a single line
    break ends a story; two part its paragraphs); the last story is dropped unless the text ends with a line break
    (the copy may cut it off)."""
    text = re.sub(r"(?m)^[ \t]+$", "", text)  # a line of spaces parts paragraphs as an empty one does
    stories = re.split(r"(?<!\n)\n(?![\n ])", text)  # a line that begins with a space goes on its paragraph
    if not text.endswith("\n"):
        stories = stories[:-1]
    return [_one_line(s) for s in stories if s.strip()]


def stories_of_json_texts(text: str) -> list[str]:
    """The stories of a JSON object ``{"texts": [story, ...]}``."""
    return [_one_line(s) for s in json.loads(text)["texts"] if isinstance(s, str) and s.strip()]


STORY_READERS: dict[str, Callable[[str], list[str]]] = {
    "end-marks": stories_between_end_marks, "blank-line-paragraphs": stories_of_blank_line_paragraphs,
    "json-texts": stories_of_json_texts}


def _cp1252_byte(char: str) -> int:
    try:
        return char.encode("cp1252")[0]
    except UnicodeEncodeError:
        return ord(char) if ord(char) < 256 else 0


# the characters Windows-1252 shows for the bytes 0x80-0xBF (latin-1's for the five it leaves undefined): the last
# byte of a UTF-8 sequence E2 80 xx (U+2000-U+203F: quotes, dashes, the ellipsis) read that way
_CONTINUATION = "".join(bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(0x80, 0xC0))
_WRONGLY_DECODED = re.compile("â€([" + re.escape(_CONTINUATION) + "])?")


def mend_wrong_decoding(text: str) -> str:
    """UTF-8 punctuation once read as Windows-1252 (``â€œ`` for “, ``â€™`` for ’, ``â€”`` for —) written back as it
    was. ” (bytes E2 80 9D) lost its last byte that way, which Windows-1252 leaves undefined: an ``â€`` that no
    such byte follows is ”."""
    def mended(match: re.Match) -> str:
        last = match.group(1)
        return "\u201d" if last is None else bytes([0xE2, 0x80, _cp1252_byte(last)]).decode("utf-8")
    return _WRONGLY_DECODED.sub(mended, text)


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, check=False)


def check_clones(clones: dict[str, Path]) -> None:
    """ValueError for a clone that is no git repository or lacks the commit its sources are read at."""
    for source in TATOEBA + STORIES:
        if _git(clones[source.repo], "cat-file", "-e", f"{source.commit}^{{commit}}").returncode != 0:
            raise ValueError(f"{clones[source.repo]} is no clone of {source.repo} holding commit {source.commit[:8]} "
                             "(give its .git folder, or a bare clone).")


def read_source(source: Source, clones: dict[str, Path]) -> bytes | None:
    """The file's bytes at its commit in the clone given for its repository; None when that clone lacks the file
    (a partial clone, or a snapshot that leaves large files out)."""
    done = _git(clones[source.repo], "cat-file", "blob", f"{source.commit}:{source.path}")
    return done.stdout if done.returncode == 0 else None


def _text(data: bytes) -> str:
    """UTF-8 text, Windows line ends made plain; a character cut in two where a copy ends is dropped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(data) - 3:
            raise
        text = data[:err.start].decode("utf-8")
    return text.replace("\r\n", "\n")


def distinct_stories(texts: list[tuple[Source, str]]) -> tuple[list[str], list[dict]]:
    """Every source's stories (mended) but those whose text, in any case, is part of a story read before (a copy
    whose line breaks part some stories' paragraphs as they part stories gives those paragraphs as stories of
    their own); and per source how many it held and how many were new."""
    kept: list[str] = []
    read = ""  # every story kept so far, lowercased, a line each
    counts = []
    for source, text in texts:
        stories = [mend_wrong_decoding(s) for s in STORY_READERS[source.kind](text)]
        new = 0
        for story in stories:
            if story.lower() not in read:
                read += story.lower() + "\n"
                kept.append(story)
                new += 1
        counts.append({"stories": len(stories), "new": new})
    return kept, counts


def gather(out: Path, clones: dict[str, Path], log: Callable[[str], object] = print, allow_missing: bool = False) -> dict:
    """Write the Tatoeba files, the stories and ``SOURCES.json`` under ``out`` (see the module's docstring); the
    record written. A source file absent from its clone is a ValueError after the record is written, unless
    ``allow_missing``."""
    missing_repos = sorted({s.repo for s in TATOEBA + STORIES} - set(clones))
    if missing_repos:
        raise ValueError(f"Give a clone of each repository (--repo OWNER/NAME=GITDIR); missing: {', '.join(missing_repos)}.")
    check_clones(clones)
    shutil.rmtree(out / "tatoeba", ignore_errors=True)  # no file of an earlier gathering left to be read as this one's
    record: dict = {"tatoeba": [], "stories": [], "absent": []}
    for source in TATOEBA:
        data = read_source(source, clones)
        if data is None:
            record["absent"].append(f"{source.repo}:{source.path}")
            continue
        storage.write_bytes(out / "tatoeba" / source.name, data)
        record["tatoeba"].append({**source.__dict__, "file": f"tatoeba/{source.name}",
                                  "sha256": hashlib.sha256(data).hexdigest()})
    texts = []
    for source in STORIES:
        data = read_source(source, clones)
        if data is None:
            record["absent"].append(f"{source.repo}:{source.path}")
            continue
        texts.append((source, _text(data)))
        record["stories"].append({**source.__dict__, "sha256": hashlib.sha256(data).hexdigest()})
    stories, counts = distinct_stories(texts)
    for entry, count in zip(record["stories"], counts):
        entry.update(count)
    storage.write_text(out / "stories.txt", "".join(s + "\n" for s in stories))
    record["stories_file"] = {"file": "stories.txt", "stories": len(stories),
                              "sha256": hashlib.sha256((out / "stories.txt").read_bytes()).hexdigest()}
    storage.write_text(out / "SOURCES.json", json.dumps(record, indent=1) + "\n")
    for gone in record["absent"]:
        log(f"absent from its clone, left out: {gone}")
    if record["absent"] and not allow_missing:
        raise ValueError(f"{len(record['absent'])} source file(s) absent from their clones (listed above and in "
                         f"{out / 'SOURCES.json'}); the corpus would differ from the twins'. Use a full clone, or "
                         "--allow-missing to go on without them.")
    log(f"{len(record['tatoeba'])} Tatoeba files, {len(stories):,} stories "
        f"({', '.join(str(c['new']) for c in counts)} new from each source) -> {out}")
    return record


def parse_clones(pairs: list[str]) -> dict[str, Path]:
    """``OWNER/NAME=GITDIR`` pairs as a mapping (ValueError for one without ``=``)."""
    clones = {}
    for pair in pairs:
        repo, sep, folder = pair.partition("=")
        if not sep or "/" not in repo:
            raise ValueError(f"--repo takes OWNER/NAME=GITDIR, got {pair!r}.")
        clones[repo] = Path(folder)
    return clones


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the folder to write into")
    parser.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=GITDIR",
                        help="a clone of one source repository (its .git folder, or a bare clone); once for each")
    parser.add_argument("--allow-missing", action="store_true",
                        help="go on when a source file is absent from its clone (recorded in SOURCES.json)")
    args = parser.parse_args(argv)
    try:
        gather(Path(args.out), parse_clones(args.repo), allow_missing=args.allow_missing)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
