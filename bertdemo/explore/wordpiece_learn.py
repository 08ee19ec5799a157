"""Where a WordPiece vocabulary comes from, and why a word splits the way it does.

:func:`greedy_split` is WordPiece's tokenization of one word, step by step: at each position the longest
vocabulary entry that matches (``##`` in front after the first piece), the longer candidates tried first and
missing; :func:`model_split` runs it on a model's own vocabulary and checks it against the tokenizer.
:func:`learn_vocabulary` learns a vocabulary from a small text with the ``tokenizers`` library's WordPiece
trainer (the settings of ``bertdemo/assets/wordpiece_cased_wiki/build.py``, uncased), so the learner sees
frequent words enter whole and rare ones stay in pieces as the vocabulary grows. No torch.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from bertdemo.models import embedded

PREFIX = "##"
MAX_WORD_CHARS = 40  # one word; BERT's own limit is 100 characters, then [UNK]
SIZES = (100, 300, 1_000, 4_000)  # the vocabulary sizes the learning is shown at
SUMMARIES = 500  # the small text: the first 500 embedded Wikipedia summaries (about 240,000 characters)
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
ALPHABET = 200  # letters kept (the build tool keeps 400 for its larger corpus)


@dataclass
class SplitStep:
    start: int  # where in the (normalised) word this piece starts
    piece: str  # the vocabulary entry taken ("##ization")
    tried: list[str]  # the longer candidates tried first, longest first, none in the vocabulary


@dataclass
class GreedySplit:
    word: str  # as typed
    normalised: str  # as the tokenizer reads it (lowercased, accents stripped for an uncased one)
    pieces: list[str]
    steps: list[SplitStep] = field(default_factory=list)
    unknown: bool = False  # no entry matched somewhere: the whole word is [UNK]


def check_word(word: str) -> str:
    """One word of letters, at most :data:`MAX_WORD_CHARS`; ValueError otherwise."""
    word = (word or "").strip()
    if not word:
        raise ValueError("Type a word, e.g. tokenization.")
    if len(word) > MAX_WORD_CHARS:
        raise ValueError(f"Type one word of at most {MAX_WORD_CHARS} characters (got {len(word)}).")
    if not word.isalpha():
        raise ValueError("Type one word of letters only: the tokenizer splits spaces and punctuation off first.")
    return word


def greedy_split(vocab: Collection[str], word: str, normalised: str | None = None) -> GreedySplit:
    """WordPiece on one word: longest match first, from the left, ``##`` on every piece after the first."""
    text = normalised if normalised is not None else word
    pieces, steps, start = [], [], 0
    while start < len(text):
        tried = []
        for end in range(len(text), start, -1):
            candidate = (PREFIX if start else "") + text[start:end]
            if candidate in vocab:
                pieces.append(candidate)
                steps.append(SplitStep(start, candidate, tried))
                start = end
                break
            tried.append(candidate)
        else:
            return GreedySplit(word, text, ["[UNK]"], steps + [SplitStep(start, "", tried)], unknown=True)
    return GreedySplit(word, text, pieces, steps)


def normalise(tokenizer, word: str) -> str:
    """``word`` as the tokenizer's normaliser reads it (lowercased and accents stripped for uncased BERT)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and backend.normalizer is not None:
        return backend.normalizer.normalize_str(word)
    return word.lower() if getattr(tokenizer, "do_lower_case", False) else word


def model_split(tokenizer, word: str) -> GreedySplit:
    """The greedy split on the model's own vocabulary; ValueError where it would differ from the tokenizer's
    own (not a WordPiece tokenizer)."""
    word = check_word(word)
    vocab: Mapping[str, int] = tokenizer.get_vocab()
    split = greedy_split(vocab, word, normalise(tokenizer, word))
    if split.pieces != tokenizer.tokenize(word):
        raise ValueError(f"This model's tokenizer is not WordPiece: it reads {word!r} as "
                         f"{' '.join(tokenizer.tokenize(word))}.")
    return split


@dataclass
class LearntVocabulary:
    size: int  # entries, specials included
    alphabet: int  # the single characters it starts from (with their ## forms)
    learnt: list[str]  # the entries added by merging, in the order they were added
    split: GreedySplit  # the word under this vocabulary


def _train(lines: tuple[str, ...], size: int) -> list[str]:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=True,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=size, min_frequency=2, special_tokens=list(SPECIALS),
                                        continuing_subword_prefix=PREFIX, limit_alphabet=ALPHABET,
                                        show_progress=False)
    tok.train_from_iterator(lines, trainer=trainer)
    vocab = tok.get_vocab()
    return sorted(vocab, key=vocab.get)  # in the order the trainer added them


@lru_cache(maxsize=len(SIZES))
def _summaries_vocabulary(size: int) -> tuple[str, ...]:
    """The vocabulary learnt from the small text at ``size`` (the same every time: learnt once per server)."""
    return tuple(_train(tuple(embedded.wiki_summaries()[:SUMMARIES]), size))


def learn_vocabulary(word: str, sizes: tuple[int, ...] = SIZES, lines: tuple[str, ...] | None = None
                     ) -> list[LearntVocabulary]:
    """Vocabularies learnt from ``lines`` (default: the first :data:`SUMMARIES` embedded Wikipedia summaries)
    at each of ``sizes``, and ``word`` (lowercased) split by each."""
    word = check_word(word)
    out = []
    for size in sizes:
        entries = list(_summaries_vocabulary(size)) if lines is None else _train(tuple(lines), size)
        chars = [e for e in entries[len(SPECIALS):] if len(e.removeprefix(PREFIX)) == 1]
        learnt = [e for e in entries[len(SPECIALS):] if len(e.removeprefix(PREFIX)) > 1]
        out.append(LearntVocabulary(len(entries), len(chars), learnt,
                                    greedy_split(set(entries), word, uncased(word))))
    return out


def uncased(word: str) -> str:
    """``word`` as the learnt (uncased) vocabulary reads it: lowercased, accents stripped."""
    from tokenizers import normalizers

    return normalizers.BertNormalizer(strip_accents=True, lowercase=True).normalize_str(word)
