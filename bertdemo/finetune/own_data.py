"""A learner's own labelled data, read and bounded before any work: sentence labels pasted as
``label<TAB>text`` lines or uploaded as a CSV / TSV file (read through ``datasets``), a hub dataset's name
(refused at once when the hub is unreachable), and word labels pasted CoNLL-style (``word<TAB>tag``, a blank
line between sentences).

Torch-free. Every refusal is a ``ValueError`` that names the line (or row) and the rule it breaks:
at most :data:`MAX_EXAMPLES` examples, :data:`MAX_TEXT_CHARS` characters a text, :data:`MIN_LABELS`–
:data:`MAX_LABELS` labels, at least :data:`MIN_PER_LABEL` examples of each, and as many different texts.
:func:`data_csv` writes the data back as CSV with every formula-like cell defused (a spreadsheet shows it as text).

Read as a person means it: a file in UTF-8 with or without Excel's byte-order mark ("CSV UTF-8"), or UTF-16 /
UTF-32 by its mark (any other bytes refused naming the line); a header that does not split on commas read on tabs
or semicolons (a spreadsheet where the decimal mark is a comma); a byte-order mark pasted with the lines is never
part of a label; copies of one text (case and spacing aside) are counted, said in the source and kept together
by :meth:`OwnData.groups` (a held-out copy of a training line would score memory); a word the model reads nothing
of (U+200B, NUL) is refused at its line.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

MAX_EXAMPLES = 5_000
MAX_TEXT_CHARS = 1_000
MIN_LABELS, MAX_LABELS = 2, 20
MIN_PER_LABEL = 4
MAX_LABEL_CHARS = 50
MAX_PASTE_CHARS = 1_000_000  # pasted lines (the HTTP door takes 2 MB a request); more comes as a file
MAX_FILE_BYTES = 8 * 2**20  # an uploaded CSV / TSV: 5,000 rows of 1,000 characters, with room for other columns
TEXT_COLUMNS = ("text", "sentence", "review", "content", "document", "utterance", "tweet")
LABEL_COLUMNS = ("label", "labels", "category", "class", "sentiment", "topic", "intent", "target")
MAX_CONLL_SENTENCES = 5_000
MAX_CONLL_WORDS = 200  # words a sentence (the model reads 64 pieces at most anyway)
MAX_WORD_CHARS = 100
MAX_TAGS = 20
MIN_SENTENCES = 5  # different sentences of word labels: one a fold (own_eval.FOLDS), copies held out together
HUB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?$")
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
SEPARATORS = {",": "commas", "\t": "tabs", ";": "semicolons"}  # a header split by the first gives one column: the next
# a file's text by its byte-order mark (Excel's "CSV UTF-8" starts with one; its "Unicode text" is UTF-16), else UTF-8;
# UTF-32's marks first: they begin with UTF-16's
BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xef\xbb\xbf", "UTF-8"),
        (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
BOM = "\ufeff"  # pasted from such a file: never part of a label
UNREAD_CATEGORIES = ("Cc", "Cf", "Mn")  # what BERT's tokenizer drops (controls, format characters; accents, uncased)
HUB_UNREACHABLE = ("The Hugging Face hub is not reachable from this server, so a hub dataset cannot be read "
                   "here: paste label<TAB>text lines or upload a CSV / TSV file instead.")


@dataclass(frozen=True)
class OwnData:
    """Labelled sentences, checked: ``labels[i]`` indexes ``names`` (sorted label names)."""

    texts: list[str]
    labels: list[int]
    names: list[str]
    source: str  # in words: "20 pasted lines", "file reviews.csv, columns 'review' (text) and 'stars' (label)"

    def __len__(self) -> int:
        return len(self.texts)

    def counts(self) -> dict[str, int]:
        """Examples per label, in label order."""
        counts = Counter(self.labels)
        return {name: counts[i] for i, name in enumerate(self.names)}

    def groups(self) -> list[int]:
        """Each example's group: the index of the first example with the same text (:func:`copy_key`), so the
        folds and splits keep copies of one text together."""
        return copy_groups(copy_key(text) for text in self.texts)

    def copies(self) -> int:
        """How many examples repeat the text of an earlier one."""
        return len(self) - len(set(self.groups()))


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def copy_key(text: str) -> str:
    """What makes two texts copies of one another: the same words, case and spacing aside."""
    return " ".join(text.split()).casefold()


def copy_groups(keys: Iterable[str]) -> list[int]:
    """Each key's group: the index of its first occurrence."""
    first: dict[str, int] = {}
    return [first.setdefault(key, i) for i, key in enumerate(keys)]


def copies_of(copies: int, unit: str = "one") -> str:
    """e.g. "1 copy of an earlier line", "3 copies of an earlier one"."""
    return f"{copies:,} cop{'y' if copies == 1 else 'ies'} of an earlier {unit}"


def _copies_note(copies: int, unit: str, what: str) -> str:
    """e.g. "3 copies of an earlier line: each text's copies are held out together" ("" when none)."""
    return f"{copies_of(copies, unit)}: each {what}'s copies are held out together" if copies else ""


def _with_notes(source: str, *notes: str) -> str:
    """``source`` with its notes in brackets (the empty ones left out)."""
    notes = tuple(note for note in notes if note)
    return f"{source} ({'; '.join(notes)})" if notes else source


def checked(rows: Iterable[tuple[str, str, str]], source: str) -> OwnData:
    """:class:`OwnData` from (where, label, text) rows (``where``: "line 3", "row 12"), every bound checked
    in the order a reader fixes them; ValueError naming the row and the rule."""
    texts, raw = [], []
    first_of: dict[str, str] = {}
    for where, label, text in rows:
        label, text = label.replace(BOM, "").strip(), " ".join(text.split())
        if len(texts) == MAX_EXAMPLES:
            raise ValueError(f"{where}: more than {MAX_EXAMPLES:,} examples; a run takes at most {MAX_EXAMPLES:,}.")
        if not label:
            raise ValueError(f"{where}: the label is empty; each example needs a label and a text.")
        if not text:
            raise ValueError(f"{where}: the text is empty; each example needs a label and a text.")
        if len(label) > MAX_LABEL_CHARS:
            raise ValueError(f"{where}: the label has {len(label):,} characters; a label has at most "
                             f"{MAX_LABEL_CHARS}.")
        if len(text) > MAX_TEXT_CHARS:
            raise ValueError(f"{where}: the text has {len(text):,} characters; a text has at most "
                             f"{MAX_TEXT_CHARS:,}.")
        if label not in first_of:
            if len(first_of) == MAX_LABELS:
                raise ValueError(f"{where}: label {label!r} is a {MAX_LABELS + 1}st label; at most "
                                 f"{MAX_LABELS} labels.")
            first_of[label] = where
        texts.append(text)
        raw.append(label)
    if not texts:
        raise ValueError(f"No examples: give at least {MIN_LABELS} labels with {MIN_PER_LABEL} examples each.")
    if len(first_of) < MIN_LABELS:
        raise ValueError(f"Only one label ({raw[0]!r}); a classifier needs {MIN_LABELS} to {MAX_LABELS} labels.")
    index = _enough_of_each(Counter(raw), first_of, "label", "has", "example")
    different = Counter(label for label, _ in {(label, copy_key(text)) for label, text in zip(raw, texts)})
    _enough_different(Counter(raw), different, first_of)
    return OwnData(texts, [index[label] for label in raw], sorted(first_of), source)


def _enough_different(counts: Counter, different: Counter, first_of: dict[str, str]) -> None:
    """Refuse a label with fewer than :data:`MIN_PER_LABEL` different texts (copies held out together would leave
    the folds too few), naming where it first occurs."""
    few = [label for label in first_of if different[label] < MIN_PER_LABEL]
    if few:
        label = few[0]
        raise ValueError(f"{first_of[label]}: label {label!r} has {_plural(counts[label], 'example')} but "
                         f"{_plural(different[label], 'different text')}; each label needs at least {MIN_PER_LABEL} "
                         "different texts" + (f" ({len(few)} labels have fewer)." if len(few) > 1 else "."))


def _enough_of_each(counts: Counter, first_of: dict[str, str], what: str, verb: str, unit: str) -> dict[str, int]:
    """Refuse a label seen fewer than :data:`MIN_PER_LABEL` times (naming where it first occurs: ``first_of``);
    each label's index in the sorted names."""
    few = [label for label in first_of if counts[label] < MIN_PER_LABEL]
    if few:
        label = few[0]
        raise ValueError(f"{first_of[label]}: {what} {label!r} {verb} {_plural(counts[label], unit)}; each {what} "
                         f"needs at least {MIN_PER_LABEL}" + (f" ({len(few)} {what}s have fewer)." if len(few) > 1 else "."))
    return {name: i for i, name in enumerate(sorted(first_of))}


def parse_lines(text: str) -> OwnData:
    """Pasted ``label<TAB>text`` lines (blank lines skipped; a first line ``label<TAB>text`` is a header)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("Paste label<TAB>text lines, one example a line, e.g. \"positive\\tA lovely film.\"")
    if len(text) > MAX_PASTE_CHARS:
        raise ValueError(f"The pasted text has {len(text):,} characters; paste at most {MAX_PASTE_CHARS:,} "
                         "(upload a CSV / TSV file for more).")
    text = text.removeprefix(BOM)  # pasted from a file that starts with one

    def rows():
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            if "\t" not in line:
                raise ValueError(f"line {number:,}: no tab; write the label, a tab, then the text.")
            label, body = line.split("\t", 1)
            if number == 1 and label.strip().lower() == "label" and body.strip().lower() == "text":
                continue
            yield f"line {number:,}", label, body

    data = checked(rows(), "")
    return OwnData(data.texts, data.labels, data.names,
                   _with_notes(_plural(len(data), "pasted line"), _copies_note(data.copies(), "line", "text")))


def _pick(columns: list[str], wanted: tuple[str, ...], chosen: str, what: str) -> str:
    if chosen:
        if chosen not in columns:
            raise ValueError(f"The file has no column {chosen[:60]!r}; its columns: {', '.join(columns)[:300]}.")
        return chosen
    lower = {c.strip().lower(): c for c in columns}
    for name in wanted:
        if name in lower:
            return lower[name]
    raise ValueError(f"No {what} column: name one of {', '.join(wanted)} (the file's columns: "
                     f"{', '.join(columns)[:300]}).")


def decode(raw: bytes) -> tuple[str, str]:
    """A file's text and the encoding it was read in: the one its byte-order mark names (:data:`BOMS`; the mark
    is not part of the text), else UTF-8. ValueError naming the line where the bytes stop being that encoding."""
    marked, encoding = next(((bom, name) for bom, name in BOMS if raw.startswith(bom)), (b"", "UTF-8"))
    codec = {"UTF-8": "utf-8-sig", "UTF-16": "utf-16", "UTF-32": "utf-32"}[encoding]
    try:
        return raw.decode(codec), encoding
    except UnicodeDecodeError as err:
        line = _line_breaks(raw[:err.start].decode(codec, errors="replace")) + 1
        if marked:
            raise ValueError(f"line {line:,}: the file's byte-order mark says {encoding}, but its bytes there are "
                             "not; save it again as \"CSV UTF-8\".") from None
        raise ValueError(f"line {line:,}: byte 0x{raw[err.start]:02X} is not UTF-8; save the file as \"CSV UTF-8\" "
                         "(Excel: Save As, then CSV UTF-8) or as UTF-16 text.") from None


def _line_breaks(text: str) -> int:
    """Line breaks in ``text`` as a CSV reader counts them (CR LF, LF or CR alone)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def _header(text: str, preferred: str) -> tuple[str, list[str]]:
    """The file's separator and header: ``preferred``, else the first of :data:`SEPARATORS` that splits the first
    line in two or more (a spreadsheet where the decimal mark is a comma writes semicolons); ValueError naming
    the rule the header breaks."""
    first = next(iter(text.splitlines()), "")
    if "\0" in first:
        raise ValueError("line 1: the header holds NUL characters (UTF-16 without its byte-order mark?); save the "
                         "file as \"CSV UTF-8\".")
    for sep in (preferred, *(s for s in SEPARATORS if s != preferred)):
        header = next(csv.reader(io.StringIO(text, newline=""), delimiter=sep), [])  # CR, LF or CR LF ends a line
        if len(header) >= 2:
            break
    else:
        others = " or ".join(name for sep, name in SEPARATORS.items() if sep != preferred)
        raise ValueError(f"line 1: the header names one column; name at least a text and a label column, separated "
                         f"by {SEPARATORS[preferred]} (or {others}).")
    if len(header) > 100:
        raise ValueError(f"line 1: the header names {len(header):,} columns; a file here has at most 100.")
    twice = next((name for name in header if header.count(name) > 1), None)
    if twice is not None:
        raise ValueError(f"line 1: the header names the column {twice[:60]!r} twice; name each column once.")
    return sep, header


def read_table(path: str | Path, text_column: str = "", label_column: str = "",
               cache_dir: str | Path | None = None) -> OwnData:
    """A CSV (comma) or TSV (``.tsv`` / ``.tab``: tab) file with a header row, read through ``datasets``; UTF-8,
    or UTF-16 / UTF-32 by its byte-order mark (:func:`decode`); another separator when the header does not split
    on the usual one (:func:`_header`). The text and label columns are the ones named, else the first of
    :data:`TEXT_COLUMNS` / :data:`LABEL_COLUMNS` the header has (any case). The source names the columns used."""
    path = Path(path)
    if not path.is_file():
        raise ValueError("Upload a CSV or TSV file first.")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"The file has {size / 2**20:.1f} MB; at most {MAX_FILE_BYTES // 2**20} MB.")
    if path.suffix.lower() not in (".csv", ".tsv", ".tab", ".txt"):
        raise ValueError(f"{path.suffix[:10] or 'A file without an extension'}: upload a .csv or .tsv file.")
    raw = path.read_bytes()
    text, _ = decode(raw)
    newlines = _line_breaks(text)
    if newlines > MAX_EXAMPLES * 4 + 10:  # rows before reading them: a multi-line cell may span a few lines
        raise ValueError(f"The file has {newlines:,} lines; a run takes at most {MAX_EXAMPLES:,} examples.")
    preferred = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    sep, header = _header(text, preferred)
    kind = "TSV" if sep == "\t" else "CSV"
    import tempfile

    from datasets import Dataset, Features, Value
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        source = path
        if raw.startswith(tuple(bom for bom, _ in BOMS)):  # the reader takes UTF-8 without a mark
            source = Path(tmp) / f"data{path.suffix.lower()}"
            source.write_text(text, encoding="utf-8", newline="")
        try:  # every column read as text (a label 1 stays "1"), an empty cell as ""
            table = Dataset.from_csv(str(source), sep=sep, keep_in_memory=True, cache_dir=tmp,
                                     features=Features({name: Value("string") for name in header}),
                                     keep_default_na=False, nrows=MAX_EXAMPLES + 1)
        except Exception as err:  # noqa: BLE001 - pandas' parser errors: a sentence, never a traceback
            cause = err
            while cause.__cause__ is not None or cause.__context__ is not None:  # datasets wraps pandas' sentence
                cause = cause.__cause__ or cause.__context__
            raise ValueError(f"The file could not be read as {kind}: "
                             f"{str(cause).splitlines()[0][:200] if str(cause) else type(cause).__name__}.") from None
    columns = list(table.column_names)
    text_col = _pick(columns, TEXT_COLUMNS, text_column, "text")
    label_col = _pick(columns, LABEL_COLUMNS, label_column, "label")
    if text_col == label_col:
        raise ValueError(f"The text and the label column are both {text_col!r}: name two different columns.")
    rows = ((f"row {i + 1:,} (after the header)", str(label), str(text or ""))
            for i, (label, text) in enumerate(zip(table[label_col], table[text_col])))
    data = checked(rows, "")
    notes = (f"separated by {SEPARATORS[sep]}" if sep != preferred else "", _copies_note(data.copies(), "row", "text"))
    source = (f"{_with_notes(f'file {path.name[:80]}, ' + _plural(len(data), 'row'), *notes)}: column {text_col!r} "
              f"(text) and {label_col!r} (label)")
    return OwnData(data.texts, data.labels, data.names, source)


def read_hub_dataset(name: str, reachable: Callable[[], bool], split: str = "train") -> OwnData:
    """A hub dataset's ``split`` with a text and a label column; refused at once (no download attempt) when
    ``reachable()`` says the hub does not answer."""
    if not isinstance(name, str) or not HUB_NAME.match(name.strip()):
        raise ValueError("Name a hub dataset as owner/name, e.g. \"stanfordnlp/sst2\".")
    if not reachable():
        raise ValueError(HUB_UNREACHABLE)
    from datasets import ClassLabel, load_dataset

    try:
        table = load_dataset(name.strip(), split=f"{split}[:{MAX_EXAMPLES + 1}]")
    except Exception as err:  # noqa: BLE001 - the hub's errors (not found, gated, network): a sentence
        raise ValueError(f"The hub dataset {name[:100]!r} could not be read: {str(err).splitlines()[0][:200]}") from None
    columns = list(table.column_names)
    text_col = _pick(columns, TEXT_COLUMNS, "", "text")
    label_col = _pick(columns, LABEL_COLUMNS, "", "label")
    feature = table.features[label_col]
    names = feature.names if isinstance(feature, ClassLabel) else None
    rows = ((f"row {i + 1:,}", names[label] if names else str(label), str(text))
            for i, (label, text) in enumerate(zip(table[label_col], table[text_col])))
    data = checked(rows, "")
    return OwnData(data.texts, data.labels, data.names,
                   f"{_with_notes(f'hub dataset {name.strip()} ({split})', _copies_note(data.copies(), 'row', 'text'))}"
                   f": column {text_col!r} (text) and {label_col!r} (label)")


def parse_conll(text: str) -> list[tuple[list[str], list[str]]]:
    """CoNLL-style word labels: ``word<TAB>tag`` a line (a line of space-separated columns takes its first as
    the word and its last as the tag), a blank line between sentences, ``-DOCSTART-`` lines skipped. Bounded:
    :data:`MAX_CONLL_SENTENCES` sentences, :data:`MAX_CONLL_WORDS` words a sentence, :data:`MAX_WORD_CHARS`
    characters a word, 2–:data:`MAX_TAGS` tags; ValueError naming the line and the rule."""
    return _read_conll(text)[0]


def _read_conll(text: str) -> tuple[list[tuple[list[str], list[str]]], dict[str, int]]:
    """:func:`parse_conll`'s sentences and the line where each tag first occurs."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("Paste word<TAB>tag lines, a blank line between sentences, e.g. \"Paris\\tB-LOC\".")
    if len(text) > MAX_PASTE_CHARS:
        raise ValueError(f"The pasted text has {len(text):,} characters; paste at most {MAX_PASTE_CHARS:,}.")
    text = text.removeprefix(BOM)  # pasted from a file that starts with one
    sentences: list[tuple[list[str], list[str]]] = []
    words: list[str] = []
    tags: list[str] = []
    seen_tags: dict[str, int] = {}  # tag -> the line it first occurs on

    def close(number: int) -> None:
        if words:
            if len(sentences) == MAX_CONLL_SENTENCES:
                raise ValueError(f"line {number:,}: more than {MAX_CONLL_SENTENCES:,} sentences; at most "
                                 f"{MAX_CONLL_SENTENCES:,}.")
            sentences.append((list(words), list(tags)))
            words.clear()
            tags.clear()

    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            close(number)
            continue
        if line.startswith("-DOCSTART-"):
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) < 2 or not parts[0].strip() or not parts[-1].strip():
            raise ValueError(f"line {number:,}: write the word, a tab, then its tag.")
        word, tag = parts[0].strip(), parts[-1].replace(BOM, "").strip()
        if len(word) > MAX_WORD_CHARS or any(ch.isspace() for ch in word):
            raise ValueError(f"line {number:,}: the word has {len(word):,} characters or a space; one word a line, "
                             f"at most {MAX_WORD_CHARS} characters.")
        if unread(word):
            raise ValueError(f"line {number:,}: the word {shown_codes(word)!r} has no character the model reads (only "
                             "invisible or control characters); write a word or remove the line.")
        if not tag:
            raise ValueError(f"line {number:,}: write the word, a tab, then its tag.")
        if len(tag) > MAX_LABEL_CHARS:
            raise ValueError(f"line {number:,}: the tag has {len(tag):,} characters; at most {MAX_LABEL_CHARS}.")
        if tag not in seen_tags:
            if len(seen_tags) == MAX_TAGS:
                raise ValueError(f"line {number:,}: tag {tag!r} is a {MAX_TAGS + 1}st tag; at most {MAX_TAGS} tags.")
            seen_tags[tag] = number
        if len(words) == MAX_CONLL_WORDS:
            raise ValueError(f"line {number:,}: the sentence has more than {MAX_CONLL_WORDS} words; put a blank "
                             "line between sentences.")
        words.append(word)
        tags.append(tag)
    close(len(lines) + 1)
    if not sentences:
        raise ValueError("No sentences: paste word<TAB>tag lines.")
    if len(seen_tags) < 2:
        raise ValueError(f"Only one tag ({next(iter(seen_tags))!r}); word labels need 2 to {MAX_TAGS} tags.")
    return sentences, seen_tags


@dataclass(frozen=True)
class OwnWords:
    """Word-labelled sentences, checked: ``tags[s][w]`` (the tag of word ``w`` of sentence ``s``) indexes
    ``names`` (sorted tag names). An example is a sentence."""

    words: list[list[str]]
    tags: list[list[int]]
    names: list[str]
    source: str

    def __len__(self) -> int:
        return len(self.words)

    def counts(self) -> dict[str, int]:
        """Words per tag, in tag order."""
        counts = Counter(t for row in self.tags for t in row)
        return {name: counts[i] for i, name in enumerate(self.names)}

    def groups(self) -> list[int]:
        """Each sentence's group: the index of the first sentence of the same words (case aside), so the folds
        and splits keep copies of one sentence together."""
        return copy_groups(copy_key(" ".join(words)) for words in self.words)

    def copies(self) -> int:
        """How many sentences repeat the words of an earlier one."""
        return len(self) - len(set(self.groups()))


def parse_words(text: str) -> OwnWords:
    """Pasted CoNLL-style word labels (:func:`parse_conll`'s format and bounds) with every tag on at least
    :data:`MIN_PER_LABEL` words; ValueError naming the line and the rule."""
    sentences, first_line = _read_conll(text)
    index = _enough_of_each(Counter(tag for _, tags in sentences for tag in tags),
                            {tag: f"line {number:,}" for tag, number in first_line.items()}, "tag", "is on", "word")
    names = sorted(first_line)
    n_words = sum(len(words) for words, _ in sentences)
    data = OwnWords([list(words) for words, _ in sentences], [[index[t] for t in tags] for _, tags in sentences],
                    names, "")
    different = len(set(data.groups()))
    if different < MIN_SENTENCES:
        raise ValueError(f"Only {different} different sentences" + (f" ({copies_of(data.copies())})"
                                                                     if data.copies() else "")
                         + f"; word labels need at least {MIN_SENTENCES} different sentences, one for each fold of "
                         "the cross-validation.")
    return OwnWords(data.words, data.tags, names, _with_notes(
        _plural(len(sentences), "pasted sentence"), _plural(n_words, "word"),
        _copies_note(data.copies(), "sentence", "sentence")))


def unread(word: str) -> bool:
    """Whether BERT's tokenizer reads nothing of ``word``: every character a control or format character (NUL,
    U+200B, U+FEFF), a replacement character, or an accent an uncased model strips (:data:`UNREAD_CATEGORIES`)."""
    return all(unicodedata.category(ch) in UNREAD_CATEGORIES or ch == "\ufffd" for ch in word)


def shown_codes(word: str) -> str:
    """``word`` as a person can read it: a character that shows nothing as its code point (e.g. "U+200B")."""
    return " ".join(f"U+{ord(ch):04X}" for ch in word) if unread(word) else word


_WORD_LINE = re.compile(r"^\S+(\t|[ ]+)\S+$")


def looks_like_words(text: str) -> bool:
    """Whether pasted lines read as word labels (``word<TAB>tag``, one word and one tag a line, a blank line
    between sentences) rather than ``label<TAB>text`` lines: every line two single words and a blank line
    between two of them. A choice the caller can always make explicit (``label_per``)."""
    if not isinstance(text, str):
        return False
    lines = [line.strip() for line in text.strip().splitlines() if not line.startswith("-DOCSTART-")]
    filled = [line for line in lines if line]
    return bool(filled) and len(filled) < len(lines) and all(_WORD_LINE.match(line) for line in filled)


def words_csv(data: OwnWords, predictions: list[list[str]] | None = None) -> str:
    """The word labels as CSV (``sentence`` number from 1, ``word``, ``tag``, and ``prediction`` when given),
    every cell defused."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["sentence", "word", "tag"] + (["prediction"] if predictions is not None else []))
    for s, (words, tags) in enumerate(zip(data.words, data.tags)):
        for w, (word, tag) in enumerate(zip(words, tags)):
            guess = predictions[s] if predictions is not None else []  # "" or []: a fold not done
            row = [s + 1, word, data.names[tag]] + ([guess[w] if w < len(guess) else ""]
                                                    if predictions is not None else [])
            writer.writerow([defuse(cell) for cell in row])
    return out.getvalue()


def defuse(cell: object) -> str:
    """A cell a spreadsheet shows as text: line breaks folded, a leading =, +, -, @, tab or CR quoted."""
    text = str(cell)
    flat = text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    return "'" + flat if text.startswith(FORMULA_PREFIXES) else flat


def data_csv(data: OwnData, predictions: list[str] | None = None) -> str:
    """The data as CSV (``label``, ``text``, and ``prediction`` when given), every cell defused."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["label", "text"] + (["prediction"] if predictions is not None else []))
    for i, (text, label) in enumerate(zip(data.texts, data.labels)):
        row = [data.names[label], text] + ([predictions[i]] if predictions is not None else [])
        writer.writerow([defuse(cell) for cell in row])
    return out.getvalue()


WORDS_EXAMPLE = "\n\n".join("\n".join(f"{word}\t{tag}" for word, tag in zip(words.split(), tags.split()))
                              for words, tags in (  # each ambiguous word once a verb, once a noun: context decides
    ("I book a table .", "PRON VERB DET NOUN PUNCT"),
    ("The book is long .", "DET NOUN VERB ADJ PUNCT"),
    ("We watch the game .", "PRON VERB DET NOUN PUNCT"),
    ("My watch is slow .", "PRON NOUN VERB ADJ PUNCT"),
    ("They play in the park .", "PRON VERB ADP DET NOUN PUNCT"),
    ("The play was funny .", "DET NOUN VERB ADJ PUNCT"),
    ("She will light the fire .", "PRON VERB VERB DET NOUN PUNCT"),
    ("The light is bright .", "DET NOUN VERB ADJ PUNCT"),
    ("Dogs run in the rain .", "NOUN VERB ADP DET NOUN PUNCT"),
    ("A long run is good .", "DET ADJ NOUN VERB ADJ PUNCT"),
    ("I drink cold water .", "PRON VERB ADJ NOUN PUNCT"),
    ("The drink was sweet .", "DET NOUN VERB ADJ PUNCT"),
    ("We walk to the shop .", "PRON VERB ADP DET NOUN PUNCT"),
    ("The walk took an hour .", "DET NOUN VERB DET NOUN PUNCT"),
    ("You cook a fine meal .", "PRON VERB DET ADJ NOUN PUNCT"),
    ("The cook is busy .", "DET NOUN VERB ADJ PUNCT"),
    ("Birds fly over the sea .", "NOUN VERB ADP DET NOUN PUNCT"),
    ("A fly sat on the cake .", "DET NOUN VERB ADP DET NOUN PUNCT"),
    ("They plant a tree .", "PRON VERB DET NOUN PUNCT"),
    ("The plant needs water .", "DET NOUN VERB NOUN PUNCT"),
))

SENTIMENT_EXAMPLE = "\n".join(f"{label}\t{text}" for label, text in (
    ("positive", "A warm, funny film that I would happily watch again."),
    ("negative", "The plot made no sense and the acting was wooden."),
    ("positive", "The soup was delicious and the staff were lovely."),
    ("negative", "Cold food, rude waiter, and we waited an hour."),
    ("positive", "This book kept me up all night; a wonderful read."),
    ("negative", "I gave up on this book after fifty dull pages."),
    ("positive", "The new phone is fast and the battery lasts for days."),
    ("negative", "The screen cracked in a week and support never replied."),
    ("positive", "A beautiful hotel with a great view and a comfortable bed."),
    ("negative", "The room was dirty and the shower did not work."),
    ("positive", "The concert was brilliant from the first song to the last."),
    ("negative", "The sound was awful and the band played for twenty minutes."),
    ("positive", "Our guide was friendly and the tour was fascinating."),
    ("negative", "A boring tour with a guide who could not be heard."),
    ("positive", "I love these shoes: comfortable, light and well made."),
    ("negative", "The shoes fell apart after two walks; a waste of money."),
    ("positive", "The game is clever, fun and looks gorgeous."),
    ("negative", "The game crashes constantly and the controls are clumsy."),
    ("positive", "Fresh bread, kind people, a perfect little bakery."),
    ("negative", "Stale bread and high prices; I will not go back."),
))
