"""Where WordPiece's pieces come from, in words: a word's greedy split on a model's vocabulary, step by step,
and the same word under vocabularies learnt from a small text (:mod:`bertdemo.explore.wordpiece_learn`)."""

from __future__ import annotations

from bertdemo.explore.wordpiece_learn import SUMMARIES, GreedySplit, LearntVocabulary
from bertdemo.viz.text import html_code, literal

TRIED_SHOWN = 4  # the longest candidates tried at a step, then a count


def _pieces(split: GreedySplit) -> str:
    return " + ".join(html_code(p) for p in split.pieces)


def split_markdown(split: GreedySplit, model_name: str, vocab_size: int) -> str:
    """The model's split of the word and why: longest match first, from the left."""
    lines = [f"**{literal(split.word)}** → {_pieces(split)} in {literal(model_name)}'s vocabulary of "
             f"**{vocab_size:,}** pieces. Why: WordPiece takes, from the left, the **longest** entry of the "
             "vocabulary that matches, then goes on from where it ended with `##` pieces:"]
    for number, step in enumerate(split.steps, start=1):
        tried = step.tried[:TRIED_SHOWN]
        more = len(step.tried) - len(tried)
        missing = (", ".join(html_code(t) for t in tried) + (f" and {more} shorter" if more else "")
                   + " — not in the vocabulary; ") if tried else ""
        found = f"{html_code(step.piece)} is." if step.piece else "nothing matches: the whole word is `[UNK]`."
        lines.append(f"{number}. from character {step.start}: {missing}{found}")
    return "  \n".join(lines)


def learning_markdown(learnt: list[LearntVocabulary]) -> str:
    """The word under each learnt vocabulary, and the first pieces the learning added."""
    rows = "".join(f"| {v.size:,} | {v.alphabet} | {len(v.learnt):,} | {_pieces(v.split)} |\n" for v in learnt)
    first = learnt[-1].learnt[:30]
    return (
        f"**Learnt here, now**, from the first {SUMMARIES} embedded Wikipedia summaries, by the `tokenizers` "
        "library's WordPiece trainer: it starts from the single characters (and their `##` forms), then adds, "
        "again and again, the merge of two pieces that pairs most often in the text, until the vocabulary has "
        "the size asked for. Frequent words end up whole, rare ones stay in pieces:\n\n"
        "| vocabulary size | characters | merged pieces | the word |\n|---|---|---|---|\n" + rows +
        "\nThe first pieces merged (the commonest pairs of this text): "
        + ", ".join(html_code(p) for p in first) + ".  \n"
        "BERT's 30,522 pieces were learnt the same way from its own pretraining text (Wikipedia and BookCorpus, "
        "much larger than this one), which is why its vocabulary holds *token* and *##ization*. Google did not publish "
        "its WordPiece trainer; the `tokenizers` one merges the commonest pairs, as BPE does."
    )
