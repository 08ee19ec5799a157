"""Predict, then reveal: each Learn step's question to the learner, asked before the answer is shown, and the
guess graded against the live model's answer.

A step's :class:`Prediction` is built from the numbers of its answer (:func:`bertdemo.learn.path.answer`: the
same computations as the step's view, on the model in use and the learner's sentence), so its truth is the
model's own. :func:`grade` is exact: a choice is right when it is the truth, a number when it is within the
question's stated tolerance. Torch-free, gradio-free: the page grades a guess without the model.

The learner's progress (each step's guess and whether it was right, the concept check's answers) is a plain
dict kept in their own browser; :func:`clean_progress` bounds whatever a browser sends back, and
:func:`answer_records` turns it into rows (step, question, guess, truth, correct).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from bertdemo.learn.steps import STEP_KEYS
from bertdemo.viz.text import html_code, literal

CHOICE, NUMBER = "choice", "number"
YES, NO = "Yes", "No"
MAX_GUESS_CHARS = 120  # a choice is one of the question's own; a longer text is no guess of ours
MAX_ID_CHARS = 60
ASKED_CHARS = 16  # an asking's digest: 64 bits of a sha256
ROW_KEYS = ("step", "question", "guess", "truth", "correct")  # an answer as a class and a CSV read it


@dataclass(frozen=True)
class Prediction:
    """One question asked before a step's answer: a choice among ``choices`` or a number."""

    step: str
    id: str  # the question's id, stable across sentences and models (e.g. "outputs.top-word")
    prompt: str  # Markdown
    kind: str  # CHOICE or NUMBER
    truth: str | float  # the live model's answer
    reveal: str  # the truth in words, shown with the verdict
    choices: tuple[str, ...] = ()
    tolerance: float = 0.0  # NUMBER: right when |guess - truth| <= tolerance
    unit: str = ""
    asked: str = ""  # which asking: the sentence and model it was asked on (:func:`asking`); "" when not said

    def to_json(self) -> dict:
        return asdict(self) | {"choices": list(self.choices)}


def asking(step: str, text: str, model: str) -> str:
    """A short digest naming one asking of a step's question: the same step, sentence and model give the same one. A
    guess is kept for its asking, so a new sentence asks again (the verdict of another sentence's guess beside this
    sentence's answer told before the learner guessed) and the same sentence shows the guess given."""
    return hashlib.sha256(f"{step}\n{' '.join(str(text).split())}\n{model}".encode()).hexdigest()[:ASKED_CHARS]


def _yes_no(step: str, qid: str, prompt: str, yes: bool, reveal: str) -> Prediction:
    return Prediction(step, qid, prompt, CHOICE, YES if yes else NO, reveal, (YES, NO))


def _distinct(values) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(v) for v in values))


def _shown(token: str) -> str:
    return html_code(token)  # the learner's own text: shown as typed, never as markup


SPECIAL = ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "<s>", "</s>", "<mask>", "<pad>")


def _embeddings(n: dict) -> Prediction:
    count = len(n["tokens"])
    return Prediction("embeddings", "embeddings.token-count",
                      "How many tokens will BERT see for your sentence, `[CLS]` and `[SEP]` included?", NUMBER,
                      count, f"{count} tokens: " + " ".join(_shown(t) for t in n["tokens"]), unit="tokens")


def _order(n: dict) -> Prediction:
    same = float(n["max_diff_without_positions"]) < 1e-4
    return _yes_no("order", "order.shuffle-without-positions",
                   "Shuffle the words of your sentence and zero the position embeddings: will any word's final "
                   "vector change?", not same,
                   f"largest change without positions: {float(n['max_diff_without_positions']):.1e} — "
                   + ("nothing: without positions BERT cannot see order." if same else "they change."))


def _by_position(tokens: list) -> list[str]:
    """Each token as a choice: a token the sentence holds twice named with its position ("the (position 5)"), so
    every token is its own choice (the two "the"s were one, and the truth could be either)."""
    counts = Counter(str(t) for t in tokens)
    return [f"{t} (position {i})" if counts[str(t)] > 1 else str(t) for i, t in enumerate(tokens)]


def _attention(n: dict) -> Prediction:
    tokens = [str(t) for t in n["tokens"]]
    labels = _by_position(tokens)
    top = int(n["top_position"]) if "top_position" in n else tokens.index(str(n["top_token"]))

    def said(i: int) -> str:  # the token as typed, its position (when named) outside it
        return _shown(tokens[i]) + labels[i][len(tokens[i]):]

    return Prediction("attention", "attention.top-token",
                      f"Layer 0, head 0: which token will {said(n['query'])} attend to most?", CHOICE,
                      labels[top], f"{said(top)}, with weight {float(n['top_prob']):.3f}", tuple(labels))


def _outputs(n: dict) -> Prediction:
    top = [str(t) for t in n["fill_mask_top"]]
    return Prediction("outputs", "outputs.top-word",
                      f"On {_shown(n['masked_text'])}: which word will the model rank first at the `[MASK]`?",
                      CHOICE, top[0], f"{_shown(top[0])} ranks first; then " + ", ".join(_shown(t) for t in top[1:]),
                      tuple(sorted(set(top))))


def _loss(n: dict) -> Prediction:
    rank = int(n["rank"])
    return _yes_no("loss", "loss.word-ranked-first",
                   f"Hide *{literal(n['word'])}* in your sentence: will the model rank it first at the `[MASK]`?", rank == 1,
                   f"*{literal(n['word'])}* is rank {rank}, p = {float(n['prob']):.4f}, so the loss is "
                   f"{float(n['neg_log_prob']):.4f}")


def _rates(n: dict) -> Prediction:
    share = round(100 * float(n["chosen"]) * float(n["[MASK]"]), 1)
    return Prediction("rates", "rates.mask-share",
                      "BERT masks 80/10/10. In one masking of your sentence, what **percentage of all its tokens** "
                      "becomes `[MASK]`?", NUMBER, share,
                      f"{share:g} % ({float(n['chosen']):.1%} chosen × {float(n['[MASK]']):.1%} of those as [MASK], "
                      f"over {n['draws']:,} draws)", tolerance=3.0, unit="%")


def _masks(n: dict) -> Prediction:
    times = int(n["times_each_mask_seen"])
    return Prediction("masks", "masks.times-each-mask-seen",
                      "Static masking writes 10 masked copies of the data once; training runs 40 epochs. How many "
                      "times does the model see each copy's mask?", NUMBER, times, f"{times} times (40 / 10)",
                      unit="times")


def _nsp(n: dict) -> Prediction:
    return Prediction("nsp", "nsp.pair-label",
                      f"Does sentence B follow sentence A in the text?  \n> **A:** {literal(n['sentence_a'])}  \n"
                      f"> **B:** {literal(n['sentence_b'])}", CHOICE, str(n["label"]),
                      f"{n['label']}", ("IsNext", "NotNext"))


def _family(n: dict) -> Prediction:
    millions = round(int(n["bert-base"]) / 1e6, 1)
    return Prediction("family", "family.bert-base-millions",
                      "How many parameters does bert-base have, in millions?", NUMBER, millions,
                      f"{int(n['bert-base']):,} ({millions:g} million)", tolerance=round(0.1 * millions, 1),
                      unit="million")


def _no_positions(n: dict) -> Prediction:
    same = n["top"] == n["top_shuffled"]
    return _yes_no("no-positions", "no-positions.same-top-when-shuffled",
                   f"Shuffle your sentence's words ({_shown(n['shuffled'])}): will the model still put the same "
                   "word first at the `[MASK]`?", same,
                   f"{_shown(n['top'])} before, {_shown(n['top_shuffled'])} shuffled")


def _length(n: dict) -> Prediction:
    ratio = float(n["attention_cost_ratio"])
    return Prediction("length", "length.attention-cost-ratio",
                      "A 512-token block against a 128-token block: how many times as many attention scores?",
                      NUMBER, ratio, f"{ratio:g}× — (512 / 128)²", unit="×")


def _tiny(n: dict) -> Prediction:
    millions = round(int(n["parameters"]) / 1e6, 2)
    return Prediction("tiny", "tiny.parameters-millions",
                      f"BERT-tiny: {n['layers']} layers, H = {n['hidden']}. How many parameters, in millions?",
                      NUMBER, millions, f"{int(n['parameters']):,} ({millions:g} million) — most in the word "
                      "embeddings (30,522 × 128)", tolerance=round(0.25 * millions, 2), unit="million")


def _static_dynamic(n: dict) -> Prediction:
    last = n["different_sense_by_layer"][-1] if n.get("different_sense_by_layer") else min(
        p["cosine_by_layer"][-1] for p in n["pairs"])
    same = float(last) >= 0.9999
    return _yes_no("static-dynamic", "static-dynamic.same-vector",
                   f"Will *{literal(n['word'])}* have the same vector in \"the river {literal(n['word'])}\" and \"the {literal(n['word'])} "
                   "raised its rates\", after BERT's last layer?", same,
                   f"cosine {float(last):.2f} between the senses at the last layer "
                   f"(the input embedding's: {float(n['static_cosine']):.2f}) — "
                   + ("the same vector." if same else "two different vectors."))


def _why_word(n: dict) -> Prediction:
    scores = n["scores"]["integrated gradients"]
    words = [(i, t) for i, t in enumerate(n["tokens"]) if t not in SPECIAL and i != n["mask_position"]]
    best = max(words, key=lambda it: scores[it[0]])
    return Prediction("why-word", "why-word.top-attribution",
                      f"Which word of your sentence will raise P(*{literal(n['target'])}*) at the `[MASK]` most?", CHOICE,
                      best[1], f"{_shown(best[1])}, integrated gradients {scores[best[0]]:+.4f}",
                      _distinct(t for _, t in words))


CLS_BINS = ("below 0.5", "0.5 to 0.9", "above 0.9")


def _cls(n: dict) -> Prediction:
    cos = float(n["cls_mean_cosine"])
    truth = CLS_BINS[0] if cos < 0.5 else CLS_BINS[1] if cos <= 0.9 else CLS_BINS[2]
    return Prediction("cls", "cls.mean-cosine",
                      "Before any fine-tuning: the cosine between the `[CLS]` vector and the mean of the words' "
                      "vectors (last layer) is…", CHOICE, truth, f"{cos:.2f}", CLS_BINS)


def _finetune(n: dict) -> Prediction:
    truth = ", ".join(f"{v:g}" for v in n["learning_rates"])
    return Prediction("finetune", "finetune.learning-rates",
                      "Which learning rates does the BERT paper fine-tune with?", CHOICE, truth, truth,
                      ("0.1, 0.01", "0.001", truth))


def _why_pretrain(n: dict) -> Prediction:
    beats = max(n["random_accuracy"]) > float(n["bag_of_words"])
    return _yes_no("why-pretrain", "why-pretrain.random-beats-bag-of-words",
                   "Same model shape, same data, 3 minutes of fine-tuning: will **random** weights beat a "
                   "bag-of-words classifier?", beats,
                   f"random weights {max(n['random_accuracy']):.0%} at best, bag of words "
                   f"{float(n['bag_of_words']):.0%}")


def _layers(n: dict) -> Prediction:
    count = int(n["hidden_states"])
    return Prediction("layers", "layers.hidden-states",
                      "How many hidden states can a probe read in the model in use (the embeddings included)?",
                      NUMBER, count, f"{count}: the embeddings, then {count - 1} layers", unit="hidden states")


def _names(n: dict) -> Prediction:
    labelled = int(n["labelled_pieces"])
    return Prediction("names", "names.labelled-pieces",
                      f"Your sentence has {n['words']} words in {n['pieces']} pieces (`[CLS]` and `[SEP]` included). "
                      "How many pieces will carry a label the loss reads (the others get -100)?", NUMBER, labelled,
                      f"{labelled}: each labelled word's first piece; `[CLS]`, `[SEP]`, later pieces and unlabelled "
                      "words get -100", unit="pieces")


WHY_B_CHOICES = ("The masked LM (both sides)", "The left-to-right LM (words before only)", "Both the same")


def _why_b(n: dict) -> Prediction:
    mlm, ltr = int(n["mlm_rank"]), int(n["ltr_rank"])
    truth = WHY_B_CHOICES[0] if mlm < ltr else WHY_B_CHOICES[1] if ltr < mlm else WHY_B_CHOICES[2]
    return Prediction("why-b", "why-b.better-rank",
                      f"On {_shown(n['masked_text'])}: which twin will rank the hidden word *{literal(n['hidden_word'])}* "
                      "higher?", CHOICE, truth, f"the masked LM ranks it {mlm:,}, the left-to-right LM {ltr:,}",
                      WHY_B_CHOICES)


def _people(n: dict) -> Prediction:
    shared = len(n["shared"])
    a, b = n["sentences"][:2]
    return Prediction("people", "people.shared-top-words",
                      f"How many of the top {len(n['top'][0])} words will {_shown(a)} and {_shown(b)} share?",
                      NUMBER, shared, f"{shared}: " + (", ".join(_shown(w) for w in n["shared"]) or "none"),
                      unit="words")


def _live_run(n: dict) -> Prediction:
    """Asked before the learner's run has answered it: the truth is set again when the guess is graded
    (:mod:`bertdemo.learn.live_run`, the learner's own run or the reference measurement, said in ``reveal``)."""
    from bertdemo.learn import live_run

    return _yes_no("live-run", live_run.QUESTION_ID,
                   "Start a pretraining run with the default settings on the Pretrain tab. Will its **held-out loss "
                   f"go below the word-before line** (the landmark “{live_run.LINE_LABEL}”) within "
                   f"**{live_run.clock(n['limit_s'])}** of training?", bool(n["check"]["crossed"]), n["reveal"])


def decided_on_own_run(question: dict | None, runs: Any, owner_token: str, public: bool) -> dict | None:
    """``question`` as it is; the live-run question with its truth decided now by the run of ``owner_token`` in
    ``runs`` (the pretraining runs; the reference measurement when none decides it, or when ``runs`` is None: as
    asked), still the same asking."""
    from bertdemo.learn import live_run

    if not question or question.get("id") != live_run.QUESTION_ID or runs is None:
        return question
    check, note = live_run.deciding(live_run.own_run_checks(runs, str(owner_token or ""), public))
    return prediction("live-run", live_run.numbers(check, note)).to_json() | {"asked": question.get("asked", "")}


QUESTIONS: dict[str, Callable[[dict], Prediction]] = {
    "embeddings": _embeddings, "order": _order, "attention": _attention, "outputs": _outputs, "loss": _loss,
    "rates": _rates, "masks": _masks, "nsp": _nsp, "family": _family, "no-positions": _no_positions,
    "length": _length, "tiny": _tiny, "static-dynamic": _static_dynamic, "why-word": _why_word,
    "cls": _cls, "finetune": _finetune, "why-pretrain": _why_pretrain, "layers": _layers, "names": _names, "why-b": _why_b,
    "people": _people,
    "live-run": _live_run,  # graded against the learner's own run (bertdemo.learn.live_run)
}


def prediction(step: str, numbers: dict) -> Prediction:
    """Step ``step``'s question, its truth read from the numbers of the step's live answer."""
    if step not in QUESTIONS:
        raise ValueError(f"Step {step!r} asks no question; the steps are {', '.join(QUESTIONS)}.")
    return QUESTIONS[step](numbers)


def parse_guess(question: dict, guess: Any) -> str | float:
    """A choice among the question's own, or a finite number; ValueError otherwise."""
    if guess is None or (isinstance(guess, str) and not guess.strip()):
        raise ValueError("Pick an answer first (or press “Just show me”).")
    if question["kind"] == CHOICE:
        if str(guess) not in question["choices"]:
            raise ValueError("That is not one of this question's choices.")
        return str(guess)
    try:
        value = float(guess)
    except (TypeError, ValueError):
        raise ValueError("Type a number.") from None
    if not math.isfinite(value):
        raise ValueError("Type a finite number.")
    return value


def is_right(question: dict, guess: str | float) -> bool:
    """Exact: a choice equal to the truth; a number within the question's tolerance of it."""
    if question["kind"] == CHOICE:
        return guess == question["truth"]
    return abs(float(guess) - float(question["truth"])) <= float(question["tolerance"]) + 1e-9


def grade(question: dict, guess: Any) -> dict:
    """The record of one guess: {step, question, guess, truth, correct, asked}."""
    value = parse_guess(question, guess)
    return {"step": question["step"], "question": question["id"], "guess": value, "truth": question["truth"],
            "correct": is_right(question, value), "asked": str(question.get("asked", ""))}


def shown_without_guess(question: dict) -> dict:
    """The record of a step read without a guess ("Just show me"): guess and correct are None."""
    return {"step": question["step"], "question": question["id"], "guess": None, "truth": question["truth"],
            "correct": None, "asked": str(question.get("asked", ""))}


def verdict(record: dict, question: dict) -> str:
    """The record in words (Markdown)."""
    unit = f" {question['unit']}" if question.get("unit") else ""
    truth = f"**The model's answer:** {question['reveal']}"
    if record["guess"] is None:
        return f"{truth}  \n*No guess made.*"
    guess = record["guess"] if isinstance(record["guess"], str) else f"{record['guess']:g}"
    within = f" (right within ±{question['tolerance']:g}{unit})" if question["kind"] == NUMBER and question[
        "tolerance"] else ""
    mark = "**Right**" if record["correct"] else "**Not this time**"
    return f"{mark} — you guessed **{guess}**{unit}{within}.  \n{truth}"


# ---- the learner's progress, kept in their browser ----

def empty_progress() -> dict:
    return {"answers": {}, "concept": {}}


def _plain(value: Any) -> str | float | bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else None
    return str(value)[:MAX_GUESS_CHARS]


def clean_record(step: str, value: Any) -> dict | None:
    """A stored record, bounded, or None when it is not one."""
    if not isinstance(value, dict) or not isinstance(value.get("question"), str):
        return None
    correct, asked = value.get("correct"), value.get("asked")
    return {"step": step, "question": value["question"][:MAX_ID_CHARS], "guess": _plain(value.get("guess")),
            "truth": _plain(value.get("truth")), "correct": correct if isinstance(correct, bool) else None,
            "asked": asked[:ASKED_CHARS] if isinstance(asked, str) else ""}


def clean_progress(value: Any) -> dict:
    """What a browser sent back, reduced to known steps and bounded values (anything else dropped)."""
    from bertdemo.learn import concept_check

    out = empty_progress()
    if not isinstance(value, dict):
        return out
    answers = value.get("answers")
    if isinstance(answers, dict):
        for key in STEP_KEYS:
            record = clean_record(key, answers.get(key))
            if record is not None:
                out["answers"][key] = record
    out["concept"] = concept_check.clean_answers(value.get("concept"))
    return out


def with_record(progress: Any, record: dict) -> dict:
    """``progress`` with ``record`` as its step's answer (the latest guess counts)."""
    out = clean_progress(progress)
    out["answers"][record["step"]] = clean_record(record["step"], record)
    return out


def record_for(progress: Any, question: dict) -> dict | None:
    """The stored record of this very asking (same step, question id and :func:`asking`: the same sentence and
    model), if any."""
    record = clean_progress(progress)["answers"].get(question["step"])
    if record is None or record["question"] != question["id"] or record["asked"] != str(question.get("asked", "")):
        return None
    return record


# where a learner's answers go: this browser, and their teacher when they joined a class (the Class tab sends a
# member's answers as they give them; a class member was told "kept in this browser only" while the teacher read them)
WHERE_KEPT = "Your progress (kept in this browser; your teacher sees it too if you joined a class):"


def summary(progress: Any) -> str:
    """One line: how far along the path and how many guesses were right."""
    answers = clean_progress(progress)["answers"]
    guessed = [r for r in answers.values() if r["guess"] is not None]
    right = sum(1 for r in guessed if r["correct"])
    if not answers:
        return f"*{WHERE_KEPT}* 0 of {len(STEP_KEYS)} steps done."
    unguessed = len(answers) - len(guessed)
    guesses = (f"**{right} of {len(guessed)}** guessed right (each step counts its latest sentence)" if guessed else "no guesses yet")
    return (f"*{WHERE_KEPT}* **{len(answers)} of {len(STEP_KEYS)}** steps done; " + guesses
            + (f", {unguessed} read without a guess" if unguessed and guessed else "") + ".")


def answer_records(progress: Any) -> list[dict]:
    """Every answer this learner gave, as plain rows {step, question, guess, truth, correct}: the path's
    guesses in step order (a step read without a guess has guess and correct None), then the concept
    check's items, step "concept-check:before" / "concept-check:after"."""
    from bertdemo.learn import concept_check

    clean = clean_progress(progress)
    rows = [{key: clean["answers"][k][key] for key in ROW_KEYS} for k in STEP_KEYS if k in clean["answers"]]
    return rows + concept_check.records(clean["concept"])
