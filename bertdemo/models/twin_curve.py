"""Where bidirectional pays: what the shipped twins measured along their training, read for the page (torch-free).

The twins (:mod:`bertdemo.models.twins`) were trained together (from scratch: ``build.json`` says how long; a
curve may also hold later stages that continued a build on other text) and measured at every
log-spaced checkpoint by :mod:`bertdemo.tools.measure_twin_pairs` (``bertdemo/assets/twins/curve.json``): on the
same held-out words of their own corpus (each word alone asked: the masked LM reads both sides of it, a
left-to-right LM the words before it), by the word's position in its sentence, beside the n-gram landmarks; and on
the right-context cloze set. This module turns that record into what a learner reads: the curve of each pair, where
its lines cross (the paper's Figure 5: the masked LM starts slower, then leads), the bands of positions where each
model leads at the end, the cloze, and where a learner's own pair of runs stands on the curve.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from bertdemo.models.twins import CURVE_FILE, PAIRS, TWIN_NAMES, shape_text

BOTH_NEIGHBOURS = "both neighbours"
WORD_BEFORE = "word before (bigram)"
UNIGRAM = "unigram"


def millions(tokens: float) -> str:
    """Tokens in words a learner reads: "0.3 M", "15.2 M", "2,048"; past a trillion, "1.0 × 10¹⁵"."""
    if tokens >= 1e12:
        mantissa, exponent = f"{tokens:.1e}".split("e")
        superscript = str(int(exponent)).translate(str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))
        return f"{mantissa} × 10{superscript}"
    if tokens >= 95_000:
        return f"{tokens / 1e6:.1f} M" if tokens < 9.95e6 else f"{tokens / 1e6:.0f} M"
    return f"{tokens:,.0f}"


@dataclass(frozen=True)
class PairCurve:
    """One pair's held-out loss along training: per checkpoint, each model's mean nats per word."""

    pair: str
    mlm: str  # twin kinds ("mlm", "ltr" / "ltr-masked")
    ltr: str
    tokens: list[int]  # tokens each model had read at each checkpoint
    mlm_loss: list[float]
    ltr_loss: list[float]
    landmarks: dict[str, float]  # the landmarks on the same words (fixed: they do not train)
    crossover: dict[str, Any]  # as measured (see crossover_sentence)
    buckets: list[str]  # the last checkpoint's position bands
    bucket_counts: list[int]
    mlm_by_position: list[float]
    ltr_by_position: list[float]
    questions: int


@dataclass(frozen=True)
class TwinCurve:
    """The shipped record: both pairs' curves and the cloze along training."""

    date: str
    tokens_per_step: int
    pairs: dict[str, PairCurve]
    cloze: list[dict[str, Any]]  # per checkpoint: {"tokens", "models": {kind: {...}}, "controlled": {...}, "paper": {...}}
    stages: tuple[dict[str, Any], ...] = ()  # the build, then each stage that continued it on other text (curve.json)
    text_start: dict[str, Any] | None = None  # the final models asked as a text's start (measure_twin_pairs)
    # where the runs' learning rate was warmed up again (a continued build): (tokens read then, tokens read where that
    # schedule ended, None while it ran on at the last point)
    restarts: tuple[tuple[int, int | None], ...] = ()

    @property
    def final_tokens(self) -> int:
        return self.pairs["controlled"].tokens[-1]


@lru_cache(maxsize=4)
def read_curve(path: str | Path = CURVE_FILE) -> TwinCurve | None:
    """The shipped record, or None when this install has none; read once per path (a shipped asset: the Train-both
    estimate asks for it at every change of the form). Treat the answer as read-only."""
    path = Path(path)
    if not path.is_file():
        return None
    raw = json.loads(path.read_text(encoding="utf-8"))
    points = raw["checkpoints"]
    pairs = {}
    for pair, (mlm, ltr) in raw["pairs"].items():
        last = points[-1][pair]
        pairs[pair] = PairCurve(
            pair, mlm, ltr, [int(p["tokens"]) for p in points], [p[pair]["overall"][mlm] for p in points],
            [p[pair]["overall"][ltr] for p in points],
            {k: last["overall"][k] for k in (UNIGRAM, WORD_BEFORE, BOTH_NEIGHBOURS)}, raw["crossover"][pair],
            last["buckets"], last["counts"], last["loss"][mlm], last["loss"][ltr], int(last["questions"]))
    cloze = [{"tokens": int(p["tokens"]), **p["cloze"]} for p in points]
    return TwinCurve(raw["date"], int(raw["tokens_per_step"]), pairs, cloze, tuple(raw.get("stages", ())),
                     raw.get("text_start"),
                     tuple((int(r["tokens"]), None if r.get("until_tokens") is None else int(r["until_tokens"]))
                           for r in raw.get("schedule_restarts", ())))


def later_stages(curve: TwinCurve) -> list[dict[str, Any]]:
    """The stages after the build (each: where it began, in tokens, and its corpus), in order; none for a curve of
    one build."""
    return [s for s in curve.stages if int(s.get("from_tokens") or 0) > 0]


# the texts a later stage may add: (the record's count, its copies, what they are in words)
STAGE_TEXTS = (("tatoeba_sentences", "tatoeba_copies", "everyday sentences from Tatoeba"),
               ("stories", "story_copies", "short stories from TinyStories"))


def _texts_added(corpus: dict[str, Any], count: str, copies: str, what: str) -> str:
    """"201,418 everyday sentences from Tatoeba (3 copies)": one text a stage added, as its record counts it."""
    times = int(corpus.get(copies) or 1)
    return f"{int(corpus[count]):,} {what}" + (f" ({times} copies)" if times > 1 else "")


def stage_sentence(curve: TwinCurve) -> str:
    """What changed along the curve, in words: from which token count the twins read on from their weights, and on
    what text ("" when the curve is one build)."""
    parts = []
    for stage in later_stages(curve):
        corpus = stage.get("corpus") or {}
        added = [_texts_added(corpus, count, copies, what) for count, copies, what in STAGE_TEXTS
                 if int(corpus.get(count) or 0)]
        mixed = f" mixed with {' and '.join(added)}" if added else ""
        parts.append(f"From {millions(int(stage['from_tokens']))} tokens the three twins read on from their weights, "
                     f"on the same batches, on their own text{mixed}: a later stage of training (the twins' card says "
                     f"how, and on what machine).")
    return " ".join(parts)


def schedule_label(number: int) -> str:
    """The curve's label for the line where the runs' ``number``-th learning-rate schedule began ("lr schedule 2")."""
    return f"lr schedule {number}"


def schedule_sentence(curve: TwinCurve) -> str:
    """Where the build went on past the end of its learning-rate schedule, in words ("" when it ran one schedule):
    each line's tokens and where the schedule begun there ended; the points after such a line are the same runs
    trained on, not a new build."""
    parts = []
    for number, (began, until) in enumerate(curve.restarts, start=2):
        end = (f"decayed to 0 again at {millions(until)} tokens" if until is not None
               else f"still coming down at the last point ({millions(curve.final_tokens)} tokens)")
        parts.append(f"At {millions(began)} tokens the three twins' learning rate had decayed to 0, the end of a "
                     f"schedule; from there all three trained on from their weights on a new one (the dotted line "
                     f"marked “{schedule_label(number)}”), the rate warmed up again, then {end}.")
    if not parts:
        return ""
    return " ".join(parts) + (" The points after such a line are the same runs trained on, not a new build (the "
                              "twins' card gives the recipe).")


def pair_label(pair: str) -> str:
    """"the controlled pair (embedded/twin-mlm beside embedded/twin-ltr-masked)"."""
    mlm, ltr = PAIRS[pair]
    return f"the {pair} pair ({TWIN_NAMES[mlm]} beside {TWIN_NAMES[ltr]})"


def crossover_sentence(curve: PairCurve) -> str:
    """Where the pair's lines cross, in tokens, in words; or, when they do not within the budget, the straight line
    the gap follows in log tokens and the tokens where it would reach zero."""
    c, end = curve.crossover, curve.tokens[-1]
    gap_end = curve.ltr_loss[-1] - curve.mlm_loss[-1]  # > 0: the masked LM ahead
    if c.get("crosses") and c.get("ahead_from_first"):
        return (f"The masked LM is ahead from the first checkpoint ({millions(curve.tokens[0])} tokens) to the last "
                f"({millions(end)}), by {gap_end:.2f} nats per word at the end.")
    if c.get("crosses"):
        return (f"The left-to-right LM leads until about **{millions(c['tokens'])} tokens**; from there the masked LM "
                f"is ahead, by {gap_end:.2f} nats per word at {millions(end)} tokens.")
    needed, beyond = c.get("extrapolated_tokens"), c.get("beyond_tokens")
    line = (f" On the straight line the gap follows over the last three checkpoints (in log tokens), the lines would "
            f"meet near {millions(needed)} tokens." if needed else
            f" The gap shrinks over the last three checkpoints, but so slowly that on its straight line (in log "
            f"tokens) the lines would meet only past {millions(beyond)} tokens." if beyond else
            " The gap is not shrinking over the last three checkpoints, so no crossing is in sight on this budget.")
    return (f"The left-to-right LM still leads at {millions(end)} tokens, by {-gap_end:.2f} nats per word." + line)


def position_sentence(curve: PairCurve) -> str:
    """Where each model leads at the last checkpoint, by the word's position in its sentence."""
    ahead = [b for b, m, l in zip(curve.buckets, curve.mlm_by_position, curve.ltr_by_position)
             if math.isfinite(m) and math.isfinite(l) and m < l]
    behind = [b for b, m, l in zip(curve.buckets, curve.mlm_by_position, curve.ltr_by_position)
              if math.isfinite(m) and math.isfinite(l) and m >= l]
    if not behind:
        return "At the last checkpoint the masked LM has the lower loss at every position in the sentence."
    if not ahead:
        return "At the last checkpoint the left-to-right LM has the lower loss at every position in the sentence."
    return (f"At the last checkpoint the masked LM has the lower loss at positions {', '.join(ahead)} and the "
            f"left-to-right LM at {', '.join(behind)}.")


def landmark_sentence(curve: PairCurve) -> str:
    """The models' final losses against the landmarks on the same words: which guessers each one beats."""
    both, before = curve.landmarks[BOTH_NEIGHBOURS], curve.landmarks[WORD_BEFORE]
    parts = []
    for name, loss in ((TWIN_NAMES[curve.mlm], curve.mlm_loss[-1]), (TWIN_NAMES[curve.ltr], curve.ltr_loss[-1])):
        beats = ("below the both-neighbours guesser" if loss < both else
                 "below the word-before guesser" if loss < before else "above the word-before guesser")
        parts.append(f"{name} {loss:.2f} ({beats})")
    return (f"Final held-out loss on {curve.questions:,} words: " + ", ".join(parts) +
            f"; landmarks: word before {before:.2f}, both neighbours {both:.2f} nats.")


def cloze_sentence(curve: TwinCurve, pair: str) -> str:
    """The right-context cloze at the last checkpoint for ``pair``: who ranks the right word better, how often,
    the median ranks and the top-5 shares."""
    mlm = PAIRS[pair][0]
    last = curve.cloze[-1]
    return (f"Right-context cloze ({last['items']} sentences whose words after the blank decide it), at "
            f"{millions(last['tokens'])} tokens: {_cloze_words(last, pair)}"
            + (" (why the right word so seldom reaches the top 5: the twins' card counts what their training text "
               "holds of these scenes)." if last["models"][mlm]["top5"] < SELDOM_TOP5 else "."))


def _cloze_words(checkpoint: dict[str, Any], pair: str) -> str:
    """A cloze record's verdict for ``pair`` in words: who ranks the right word better and how often, the median
    ranks, the top-5 shares and each twin's most frequent first guesses (no closing full stop)."""
    mlm, ltr = PAIRS[pair]
    m, l = checkpoint["models"][mlm], checkpoint["models"][ltr]
    versus, items = checkpoint[pair], checkpoint["items"]
    median = (f"the masked LM's {l['median_rank'] / m['median_rank']:.1f}× better" if m["median_rank"] <= l["median_rank"]
              else "the left-to-right LM's median is the better one")
    guesses = "; ".join(f"the {side} LM {listed(common_first_guesses(checkpoint, kind), items)}"
                        for side, kind in (("masked", mlm), ("left-to-right", ltr)))
    return (f"the masked LM ranks the right word better on {versus['mlm_better']} of {items}, the left-to-right LM on "
            f"{versus['ltr_better']}; median rank {m['median_rank']:,.0f} against {l['median_rank']:,.0f} ({median}); "
            f"the right word in the top 5: {m['top5']:.0%} against {l['top5']:.0%}. First guesses, most often: {guesses}")


def blocks_began(curve: TwinCurve | None) -> str:
    """Where the shipped twins' training blocks began, as their record says: "anywhere" (one stream of texts cut
    anywhere; a record without the entry is from such a build) or "text" (at a text's start)."""
    return str(((curve.text_start if curve else None) or {}).get("blocks_began", "anywhere"))


def text_start_note(curve: TwinCurve) -> str:
    """Why the page's way of asking a sentence (alone, after [CLS]) differs from a text's start in the twins'
    training, and what :func:`text_start_sentence` reports; "" when the curve has no such record."""
    if not curve.text_start:
        return ""
    asked = f"`{curve.text_start['asked_as']}`"
    if blocks_began(curve) == "text":
        return ("**How a sentence is asked.** The page asks each sentence alone, `[CLS] sentence [SEP]`, as a "
                "notebook's pipeline does, and as the twins' training blocks began: at a text's start. Each pair's last "
                f"line asks its final models after a `[SEP]` too, {asked}, as a text starts inside a block.")
    return ("**How a sentence is asked.** The page asks each sentence alone, `[CLS] sentence [SEP]`, as a notebook's "
            "pipeline does. The twins trained on one stream of texts joined by `[SEP]` and cut into blocks anywhere, "
            "so in training a `[CLS]` is almost never followed by a text's start: asked `[CLS] The …`, a "
            "left-to-right twin reads *The* as the middle of a text. Each pair's last line asks its final models as "
            f"their training showed a text's start, {asked}.")


def text_start_sentence(curve: TwinCurve, pair: str) -> str:
    """``pair``'s final models asked as their training showed a text's start (:func:`text_start_note`), beside as
    the page asks them: the held-out words and the cloze (the record ``measure_twin_pairs`` writes); "" when the
    curve has none."""
    record = curve.text_start
    if not record:
        return ""
    mlm, ltr = PAIRS[pair]
    fair, page = record["heldout"], record["heldout_as_page"]
    asked = [(m, l) for m, l in zip(fair[mlm]["by_position"], fair[ltr]["by_position"], strict=True)
             if math.isfinite(m) and math.isfinite(l)]  # a band without a held-out word has no mean
    bands = sum(m < l for m, l in asked)
    where = "at every position band" if bands == len(asked) else f"at {bands} of {len(asked)} position bands"
    return (f"At {millions(record['tokens'])} tokens: held-out loss {fair[mlm]['overall']:.2f} against "
            f"{fair[ltr]['overall']:.2f} nats per word (as asked above: {page[mlm]['overall']:.2f} against "
            f"{page[ltr]['overall']:.2f}), the masked LM lower {where}; on the cloze "
            f"{_cloze_words(record['cloze'], pair)}.")


SELDOM_TOP5 = 0.2  # below this share of the cloze items in the masked twin's top 5, the sentence says where to read why


def common_first_guesses(checkpoint: dict[str, Any], kind: str, n: int = 3) -> list[tuple[str, int]]:
    """The ``n`` first guesses twin ``kind`` gave most often over a checkpoint's cloze items, with their counts
    (most first; a tie in word order)."""
    counts = Counter(checkpoint["models"][kind]["first_guess"])
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]


SPECIAL_GUESSES = {"[SEP]": "the text ends", "[CLS]": "a block starts"}  # a left-to-right model may guess them


def listed(guesses: list[tuple[str, int]], items: int) -> str:
    """``sun`` (10 of 61), ``ball`` (5), ``[SEP]`` (the text ends: 5): each guess as code, its count, the first out
    of ``items``; a special token glossed."""
    def said(i: int, word: str, count: int) -> str:
        gloss = f"{SPECIAL_GUESSES[word]}: " if word in SPECIAL_GUESSES else ""
        return f"{code(word)} ({gloss}{count}" + (f" of {items})" if i == 0 else ")")
    return ", ".join(said(i, word, count) for i, (word, count) in enumerate(guesses))


def code(word: str) -> str:
    """``word`` as a Markdown code span (a guess may be punctuation, or a backtick itself)."""
    return f"`` {word} ``" if "`" in word else f"`{word}`"


def place_run(curve: TwinCurve, pair: str, tokens: float, yours: str = "") -> str:
    """Where a learner's own pair of runs stands on the shipped curve: "your pair: 0.3 M tokens, before the
    crossover of the shipped paper pair (3 layers, hidden 256, 4 heads: about 2.2 M tokens)" — the shipped pair's
    shape named, since a pair of another size crosses elsewhere; ``yours``: the learner's shape in the same words,
    said beside it when it differs."""
    c = curve.pairs[pair].crossover
    where = f"your pair: {millions(tokens)} tokens"
    shape = shape_text()
    shipped = f"the shipped {pair} pair" + (f" ({shape})" if shape else "")
    other = (f" Yours is another shape ({yours}): the crossover moves with a model's size and recipe, so the shipped "
             "pair's is a landmark for yours, not its prediction." if yours and shape and yours != shape else "")
    if c.get("crosses"):
        at = float(c["tokens"])
        if c.get("ahead_from_first"):
            return f"{where}; {shipped} had the masked LM ahead from its first checkpoint ({millions(at)}).{other}"
        side = "before" if tokens < at else "past"
        return f"{where}, {side} the crossover of {shipped}: about {millions(at)} tokens.{other}"
    needed, beyond = c.get("extrapolated_tokens"), c.get("beyond_tokens")
    return (f"{where}; {shipped} had not crossed by {millions(curve.pairs[pair].tokens[-1])} tokens"
            + (f" (extrapolated: near {millions(needed)})." if needed else
               f" (extrapolated: past {millions(beyond)})." if beyond else ".") + other)


def showcase_pair(curve: TwinCurve) -> str:
    """The pair a learner is shown first: the paper's pair when its masked LM ended ahead on the held-out words and
    on the right-context cloze (the claim in the paper's own setting); else the controlled pair, which isolates what
    reading both sides buys."""
    paper = curve.pairs["paper"]
    last = curve.cloze[-1]["paper"]
    if paper.mlm_loss[-1] < paper.ltr_loss[-1] and last["mlm_better"] > last["ltr_better"]:
        return "paper"
    return "controlled"
