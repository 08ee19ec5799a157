"""The word across the corpus (Context Atlas) and nearest neighbours (exBERT), on the embedded Wikipedia
summaries, offline.

* :func:`occurrences`: the sentences of the corpus that use a word (the first :data:`MAX_OCCURRENCES`, in
  file order), every layer's vector of the word in each, once per model and word; :func:`atlas` projects
  one layer's vectors to 2D (PCA fitted on the corpus occurrences; the learner's sentences placed in
  the same picture) and colours them by that layer's clusters (k-means, seeded).
* :func:`neighbour_index`: one layer's vectors of every token of the first corpus sentences, up to
  :data:`MAX_INDEX_TOKENS` tokens (bound: that many x hidden size float32, 12 MB at H = 384, 25 MB at
  768), built once per model and layer with progress, kept in the model's bounded store;
  :func:`neighbours`: the k corpus tokens most similar (cosine) to one token of the learner's sentence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bertdemo.explore.word_in_context import parse_sentences, similarities
from bertdemo.explore.word_vectors import (
    BATCH,
    activation_store,
    check_layer,
    corpus_sentences,
    encode_sentences,
    forward_hidden,
    num_layers,  # noqa: F401 - the page fits its layer sliders with it
    run_sentences,
    store_key,
    word_position,
)
from bertdemo.limits import MAX_INDEX_TOKENS, MAX_NEIGHBOURS, MAX_OCCURRENCES, MAX_WIC_TOKENS
from bertdemo.models.store import LoadedModel
from bertdemo.request_budget import WorkBudget, corpus_gflop, index_gflop, unbounded

KMEANS_SEED = 0
KMEANS_ROUNDS = 30
Progress = Callable[[float, str], None]


@dataclass
class Occurrences:
    word: str
    sentences: list[str]  # corpus sentences using the word
    vectors: np.ndarray  # (L + 1, n, H) the word's first piece in each, layer by layer

    @property
    def nbytes(self) -> int:
        return self.vectors.nbytes + sum(len(s) for s in self.sentences)


def occurrences(loaded: LoadedModel, word: str, limit: int = MAX_OCCURRENCES,
                budget: WorkBudget | None = None) -> Occurrences:
    """The word's uses in the corpus (at most ``limit``) with every layer's vector (once per model and word);
    ``budget``: the request's, charged and checked between batches when they are computed."""
    word = (word or "").strip().lower()
    if not word or any(c.isspace() for c in word):
        raise ValueError("Type one word, e.g. bank.")
    budget = budget or unbounded()

    def build() -> Occurrences:
        budget.charge(corpus_gflop(loaded.model.config, limit, MAX_WIC_TOKENS),
                      f"{loaded.name} to read up to {limit} corpus sentences", "Use a smaller model.")
        pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)
        found = [s for s in corpus_sentences(loaded) if pattern.search(s)]
        texts, vecs = [], []
        for start in range(0, len(found), BATCH):
            if len(texts) >= limit:
                break
            batch = found[start:start + BATCH]
            budget.check()
            enc = encode_sentences(loaded, batch, MAX_WIC_TOKENS, truncate=True)
            hidden = forward_hidden(loaded, enc)  # (L + 1, B, T, H)
            offsets, special = enc["offset_mapping"].tolist(), enc["special_tokens_mask"].bool().tolist()
            for b, text in enumerate(batch):
                pos = word_position(text, word, offsets[b], special[b])
                if pos is not None and len(texts) < limit:  # None: the word lies past the cut
                    texts.append(text)
                    vecs.append(hidden[:, b, pos])
        if not texts:
            raise ValueError(f"The embedded corpus has no sentence using '{word}' (as a word on its own).")
        return Occurrences(word, texts, np.stack(vecs, axis=1))

    return activation_store(loaded).get_or_build(store_key(loaded, "occurrences", word, limit), build,
                                                 lambda o: o.nbytes)


@dataclass
class Atlas:
    model_name: str
    word: str
    layer: int
    corpus_xy: np.ndarray  # (n, 2) the corpus occurrences, projected
    corpus_sentences: list[str]
    clusters: np.ndarray  # (n,) cluster of each corpus occurrence at this layer
    own_xy: np.ndarray  # (m, 2) the learner's sentences in the same projection
    own_sentences: list[str]
    own_clusters: np.ndarray  # (m,) nearest cluster centre of each of the learner's sentences
    explained: tuple[float, float]  # share of the variance along the two axes


def atlas(loaded: LoadedModel, word: str, lines: str | list[str], layer: int, clusters: int = 2,
          budget: WorkBudget | None = None) -> Atlas:
    """One layer's picture of the word's corpus uses (scikit-learn's PCA to 2D, its k-means, seeded, for the
    colours) with the learner's sentences."""
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    layer = check_layer(loaded, layer)
    if not 1 <= int(clusters) <= 6:
        raise ValueError("Colour by 1 to 6 clusters.")
    found = occurrences(loaded, word, budget=budget)
    own = similarities(loaded, word, lines) if parse_sentences(lines)[0] else None
    x = found.vectors[layer].astype(np.float64)  # (n, H)
    own_x = own.vectors[layer].astype(np.float64) if own is not None else np.zeros((0, x.shape[1]))
    km = KMeans(n_clusters=min(int(clusters), len(x)), n_init=1, max_iter=KMEANS_ROUNDS,
                random_state=KMEANS_SEED).fit(x)
    own_clusters = km.predict(own_x) if len(own_x) else np.zeros(0, dtype=int)
    if len(x) > 1:
        pca = PCA(n_components=2, svd_solver="full").fit(x)
        xy, own_xy = pca.transform(x), pca.transform(own_x) if len(own_x) else np.zeros((0, 2))
        explained = (float(pca.explained_variance_ratio_[0]), float(pca.explained_variance_ratio_[1]))
    else:  # one use of the word: one point, at the centre
        xy, own_xy, explained = np.zeros((1, 2)), np.zeros((len(own_x), 2)), (0.0, 0.0)
    return Atlas(loaded.name, found.word, layer, xy, found.sentences, km.labels_, own_xy,
                 own.sentences if own is not None else [], own_clusters, explained)


@dataclass
class NeighbourIndex:
    """One layer's unit vectors of every token of the first corpus sentences."""

    layer: int
    vectors: np.ndarray  # (N, H) float32, unit length
    tokens: list[str]  # (N,)
    sentence_of: np.ndarray  # (N,) index into ``sentences``
    position_of: np.ndarray  # (N,) token position within its sentence
    sentences: list[str]

    @property
    def nbytes(self) -> int:
        return self.vectors.nbytes + self.sentence_of.nbytes + self.position_of.nbytes + 64 * len(self.tokens) + sum(
            len(s) for s in self.sentences)


def neighbour_index(loaded: LoadedModel, layer: int, max_tokens: int = MAX_INDEX_TOKENS,
                    progress: Progress | None = None, budget: WorkBudget | None = None) -> NeighbourIndex:
    """Layer ``layer``'s index (built once per model and layer, with ``progress`` as it reads the corpus;
    ``budget``: the request's, charged and checked between batches when it is built)."""
    layer = check_layer(loaded, layer)
    max_tokens = min(int(max_tokens), MAX_INDEX_TOKENS)
    budget = budget or unbounded()

    def build() -> NeighbourIndex:
        budget.charge(index_gflop(loaded.model.config, max_tokens),
                      f"{loaded.name} to index {max_tokens:,} corpus tokens", "Use a smaller model.")
        texts = corpus_sentences(loaded)
        vecs, tokens, sent_of, pos_of, kept = [], [], [], [], []
        count, start = 0, 0
        while count < max_tokens and start < len(texts):
            batch = texts[start:start + BATCH]
            start += len(batch)
            budget.check()
            enc = encode_sentences(loaded, batch, MAX_WIC_TOKENS, truncate=True)
            hidden = forward_hidden(loaded, enc)[layer]  # (B, T, H)
            ids, special = enc["input_ids"].tolist(), enc["special_tokens_mask"].bool().tolist()
            lengths = enc["attention_mask"].sum(1).tolist()
            for b, text in enumerate(batch):
                cols = [t for t in range(lengths[b]) if not special[b][t]][:max_tokens - count]
                if not cols:
                    continue
                vecs.append(hidden[b, cols])
                tokens += loaded.tokenizer.convert_ids_to_tokens([ids[b][t] for t in cols])
                sent_of += [len(kept)] * len(cols)
                pos_of += cols
                kept.append(text)
                count += len(cols)
                if count >= max_tokens:
                    break
            if progress is not None:
                progress(min(count / max_tokens, 1.0), f"Indexing layer {layer}: {count:,} of {max_tokens:,} corpus tokens")
        v = np.concatenate(vecs).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return NeighbourIndex(layer, v, tokens, np.array(sent_of), np.array(pos_of), kept)

    return activation_store(loaded).get_or_build(store_key(loaded, "index", layer, max_tokens), build,
                                                 lambda ix: ix.nbytes)


@dataclass
class Neighbour:
    token: str
    cosine: float
    sentence: str
    position: int  # the token's position in its sentence (0 = [CLS])


@dataclass
class Neighbours:
    model_name: str
    layer: int
    tokens: list[str]  # the learner's sentence
    position: int  # the token asked about
    neighbours: list[Neighbour]
    index_size: int  # corpus tokens searched


def neighbours(loaded: LoadedModel, text: str, position: int, layer: int, k: int = 10,
               max_tokens: int = MAX_INDEX_TOKENS, progress: Progress | None = None,
               budget: WorkBudget | None = None) -> Neighbours:
    """The ``k`` corpus token occurrences nearest (cosine) to token ``position`` of ``text`` at ``layer``."""
    if not text or not text.strip():
        raise ValueError("Type a sentence.")
    if not 1 <= int(k) <= MAX_NEIGHBOURS:
        raise ValueError(f"k is 1 to {MAX_NEIGHBOURS}.")
    layer = check_layer(loaded, layer)
    run = loaded.remember(("sentence vectors", text), lambda: run_sentences(loaded, [text], MAX_WIC_TOKENS)[0])
    position = int(position)  # another token, layer or k of the same sentence: no forward
    if not 0 <= position < run.lengths[0]:
        raise ValueError(f"Token position {position} is outside the sentence: positions 0 to {run.lengths[0] - 1} "
                         f"({' '.join(run.tokens[0])}).")
    index = neighbour_index(loaded, layer, max_tokens, progress, budget)
    q = run.hidden[layer, 0, position].astype(np.float32)
    cos = index.vectors @ (q / np.linalg.norm(q))  # (N,)
    k = min(int(k), len(cos))
    top = np.argpartition(-cos, k - 1)[:k]
    top = top[np.lexsort((top, -cos[top]))]  # by cosine, then corpus order
    found = [Neighbour(index.tokens[i], float(cos[i]), index.sentences[index.sentence_of[i]], int(index.position_of[i]))
             for i in top]
    return Neighbours(loaded.name, layer, run.tokens[0], position, found, len(cos))


def neighbours_as_plain(result: Neighbours) -> dict:
    return {"model": result.model_name, "layer": result.layer, "tokens": result.tokens,
            "token": result.tokens[result.position], "position": result.position, "index_tokens": result.index_size,
            "neighbours": [{"token": n.token, "cosine": round(n.cosine, 6), "position": n.position,
                            "sentence": n.sentence} for n in result.neighbours]}
