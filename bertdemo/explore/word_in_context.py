"""One word, many meanings: the cosine similarity of a word's vectors between sentences, layer by layer,
read against the layer's random-word baseline and beside the static vector; and the sense readout.

* Layer 0 is the embeddings' output (word + position + segment, LayerNorm); layer ℓ the ℓ-th
  transformer layer's output (``hidden_states[ℓ]``). The *static* vector is the word's row of the input
  embedding table (``word_embeddings.weight[id]``): the same in every sentence, by construction.
* A word of several pieces is represented by its first piece (the result says which).
* Baseline (Ethayarajh 2019): contextual vectors are anisotropic, so even unrelated words have a
  positive cosine that grows with depth. A layer's baseline is the mean cosine between random token
  occurrences of different sentences of the embedded corpus (a fixed, seeded sample); a similarity
  is read as how far *above* that baseline it is.
* Sense readout: each sense's centroid from its first sentences of the labelled sense set
  (:mod:`bertdemo.assets.sense_sets`), the other sentences labelled by the nearest centroid (cosine),
  at every layer; against the most-frequent-sense guess. Ties (equal up to float rounding, as for the
  static vector, identical in every sentence) go to the most frequent sense of the centroid sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bertdemo.assets import sense_sets
from bertdemo.explore.word_vectors import (
    activation_store,
    corpus_sentences,
    num_layers,
    run_sentences,
    store_key,
    word_position,
)
from bertdemo.limits import MAX_WIC_SENTENCES, MAX_WIC_TOKENS, MAX_WIC_WORD_CHARS
from bertdemo.locks import pieces_of
from bertdemo.models.store import LoadedModel

BASELINE_SENTENCES = 64  # corpus sentences the random-word baseline is measured on
BASELINE_PAIRS = 2_000  # random token pairs (from different sentences)
BASELINE_SEED = 0
TIE = 1e-6  # cosines this close to the best are a tie (float rounding of identical vectors)


@dataclass
class WordInContext:
    model_name: str
    word: str
    pieces: list[str]  # the word's pieces; the first stands for the word
    sentences: list[str]
    senses: list[str]  # per sentence; "" where none was given
    positions: list[int]  # token position of the word's first piece in each sentence
    cosines: np.ndarray  # (L + 1, n, n): layer by layer, the cosine between sentence i's and j's vector
    static_cosine: float  # the static vectors' cosine (1: the same vector in every sentence)
    baseline: np.ndarray  # (L + 1,) the layer's random-word mean cosine on the corpus
    vectors: np.ndarray  # (L + 1, n, H) the word's vector in each sentence, layer by layer

    @property
    def num_layers(self) -> int:
        return self.cosines.shape[0] - 1

    @property
    def piece_note(self) -> str:
        if len(self.pieces) == 1:
            return f"'{self.word}' is one token: {self.pieces[0]}."
        return (f"'{self.word}' is {len(self.pieces)} pieces ({' '.join(self.pieces)}): its first piece, "
                f"{self.pieces[0]}, stands for the word.")

    def pair_curves(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(same-sense, different-sense) mean cosine per layer over the labelled pairs (None: no such pair)."""
        same, diff = [], []
        n = len(self.sentences)
        for i in range(n):
            for j in range(i + 1, n):
                if self.senses[i] and self.senses[j]:
                    (same if self.senses[i] == self.senses[j] else diff).append(self.cosines[:, i, j])
        return (np.mean(same, axis=0) if same else None), (np.mean(diff, axis=0) if diff else None)


def parse_sentences(lines: str | list[str]) -> tuple[list[str], list[str]]:
    """One sentence per line, optionally ``sense | sentence`` -> (sentences, senses)."""
    rows = lines.splitlines() if isinstance(lines, str) else list(lines or [])
    sentences, senses = [], []
    for row in rows:
        row = str(row).strip()
        if not row:
            continue
        sense, sep, sentence = row.partition("|")
        if not sep:
            sense, sentence = "", row
        sentences.append(sentence.strip())
        senses.append(sense.strip().lower())
    return sentences, senses


def _check(word: str, sentences: list[str]) -> str:
    word = (word or "").strip()
    if not word:
        raise ValueError("Type the word to follow, e.g. bank.")
    if len(word) > MAX_WIC_WORD_CHARS or any(c.isspace() for c in word):
        raise ValueError(f"One word of at most {MAX_WIC_WORD_CHARS} characters, e.g. bank.")
    if not 2 <= len(sentences) <= MAX_WIC_SENTENCES:
        raise ValueError(f"Give 2 to {MAX_WIC_SENTENCES} sentences, one per line (there are {len(sentences)}).")
    return word


def similarities(loaded: LoadedModel, word: str, lines: str | list[str]) -> WordInContext:
    """The word's cosine between every two of the sentences at every layer, with the baseline and static vector."""
    sentences, senses = parse_sentences(lines)
    word = _check(word, sentences)
    return loaded.remember(("word_in_context", word.lower(), tuple(sentences), tuple(senses)),
                           lambda: _similarities(loaded, word, sentences, senses))


def _similarities(loaded: LoadedModel, word: str, sentences: list[str], senses: list[str]) -> WordInContext:
    run, enc = run_sentences(loaded, sentences, MAX_WIC_TOKENS)
    offsets = enc["offset_mapping"].tolist()
    positions = []
    for i, text in enumerate(sentences):
        pos = word_position(text, word, offsets[i][:run.lengths[i]], run.special[i])
        if pos is None:
            raise ValueError(f"Sentence {i + 1} does not use the word '{word}' on its own: {text[:80]!r}.")
        positions.append(pos)
    vectors = run.hidden[:, np.arange(len(sentences)), positions]  # (L + 1, n, H)
    pieces = pieces_of(loaded.tokenizer, word)
    ids = loaded.tokenizer.convert_tokens_to_ids(pieces[:1])
    static = loaded.model.get_input_embeddings().weight[ids[0]].detach().float().cpu().numpy()
    static_cos = float(static @ static / (np.linalg.norm(static) ** 2))
    return WordInContext(loaded.name, word, pieces, sentences, senses, positions, cosine_matrix(vectors),
                         static_cos, random_word_baseline(loaded), vectors)


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """(..., n, H) -> (..., n, n) cosines (float64 arithmetic)."""
    v = vectors.astype(np.float64)
    v = v / np.linalg.norm(v, axis=-1, keepdims=True)
    return v @ np.swapaxes(v, -1, -2)


def random_word_baseline(loaded: LoadedModel) -> np.ndarray:
    """(L + 1,) mean cosine between random tokens of different corpus sentences, per layer (once per model)."""
    def build() -> np.ndarray:
        texts = corpus_sentences(loaded)[:BASELINE_SENTENCES]
        run, _ = run_sentences(loaded, texts, MAX_WIC_TOKENS, truncate=True)
        spots = [(b, t) for b in range(len(texts)) for t in range(run.lengths[b]) if not run.special[b][t]]
        rng = np.random.default_rng(BASELINE_SEED)
        first = rng.integers(len(spots), size=BASELINE_PAIRS * 2)
        second = rng.integers(len(spots), size=BASELINE_PAIRS * 2)
        pairs = [(spots[a], spots[b]) for a, b in zip(first, second) if spots[a][0] != spots[b][0]][:BASELINE_PAIRS]
        a = run.hidden[:, [p[0][0] for p in pairs], [p[0][1] for p in pairs]].astype(np.float64)  # (L + 1, P, H)
        b = run.hidden[:, [p[1][0] for p in pairs], [p[1][1] for p in pairs]].astype(np.float64)
        cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
        return cos.mean(axis=1)

    return activation_store(loaded).get_or_build(store_key(loaded, "baseline"), build, lambda a: a.nbytes)


@dataclass
class SenseReadout:
    model_name: str
    words: list[str]  # the words scored
    accuracy: np.ndarray  # (L + 1,) nearest-centroid accuracy per layer on the scored sentences
    static_accuracy: float  # the same readout on the static vectors
    most_frequent: float  # the most-frequent-sense guess's accuracy
    n_scored: int

    @property
    def best_layer(self) -> int:
        return int(np.argmax(self.accuracy))


def sense_readout(loaded: LoadedModel, word: str | None = None) -> SenseReadout:
    """Nearest-centroid sense accuracy per layer on the labelled sense set (all words, or ``word``'s)."""
    if word is not None and word not in sense_sets.WORDS:
        raise ValueError(f"The labelled sense set has {', '.join(sense_sets.WORDS)}; not {word!r}.")
    return loaded.remember(("sense_readout", word), lambda: _sense_readout(loaded, word))


def _sense_readout(loaded: LoadedModel, only: str | None) -> SenseReadout:
    words = [only] if only else list(sense_sets.WORDS)
    L = num_layers(loaded)
    hits = np.zeros(L + 1)
    static_hits = mfs_hits = scored = 0
    table = loaded.model.get_input_embeddings().weight
    for word in words:
        examples = sense_sets.examples(word)
        result = _similarities(loaded, word, [e.sentence for e in examples], [e.sense for e in examples])
        train = np.array([e.train for e in examples])
        labels = np.array([e.sense for e in examples])
        order = _by_frequency(labels[train])
        vectors = result.vectors  # (L + 1, n, H)
        static = table[loaded.tokenizer.convert_tokens_to_ids(result.pieces[0])].detach().float().cpu().numpy()
        for layer in range(L + 1):
            guess = nearest_centroid(vectors[layer][train], labels[train], vectors[layer][~train], order)
            hits[layer] += int((guess == labels[~train]).sum())
        n_test = int((~train).sum())
        guess = nearest_centroid(np.tile(static, (int(train.sum()), 1)), labels[train], np.tile(static, (n_test, 1)),
                                 order)
        static_hits += int((guess == labels[~train]).sum())
        mfs_hits += int((labels[~train] == order[0]).sum())
        scored += n_test
    return SenseReadout(loaded.name, words, hits / scored, static_hits / scored, mfs_hits / scored, scored)


def _by_frequency(labels: np.ndarray) -> list[str]:
    """Distinct labels, most frequent first (first seen first among equals)."""
    seen = list(dict.fromkeys(labels.tolist()))
    return sorted(seen, key=lambda s: -int((labels == s).sum()))


def nearest_centroid(train: np.ndarray, labels: np.ndarray, test: np.ndarray, order: list[str]) -> np.ndarray:
    """The label of the nearest (cosine) centroid for each row of ``test``; ties go to the earliest in ``order``."""
    centroids = np.stack([train[labels == s].astype(np.float64).mean(0) for s in order])  # (S, H)
    cos = cosine_rows(test, centroids)  # (n, S)
    best = cos.max(axis=1, keepdims=True)
    return np.array(order)[np.argmax(cos >= best - TIE, axis=1)]  # first (most frequent) of the tied


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a.astype(np.float64) / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b.astype(np.float64) / np.linalg.norm(b, axis=-1, keepdims=True)
    return a @ b.T


def as_plain(result: WordInContext) -> dict:
    """The API's answer: per-layer similarities (every pair), the baseline and the static vector's cosine."""
    n = len(result.sentences)
    pairs = [{"sentences": [i + 1, j + 1], "cosine_by_layer": [round(float(c), 6) for c in result.cosines[:, i, j]]}
             for i in range(n) for j in range(i + 1, n)]
    same, diff = result.pair_curves()
    return {"model": result.model_name, "word": result.word, "pieces": result.pieces, "note": result.piece_note,
            "positions": result.positions, "senses": result.senses, "pairs": pairs,
            "baseline_by_layer": [round(float(b), 6) for b in result.baseline],
            "static_cosine": round(result.static_cosine, 6),
            "same_sense_by_layer": None if same is None else [round(float(x), 6) for x in same],
            "different_sense_by_layer": None if diff is None else [round(float(x), 6) for x in diff]}
