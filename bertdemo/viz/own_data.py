"""The learner's own-data run in words: the cross-validated scores beside the landmarks on the same folds
(mean, spread, each fold), whether each lead is within the spread, or the split's validation and test figures
with the epoch chosen on validation; a sentence tagged word by word. Sentence labels or word labels alike.
Label names are the learner's: escaped as typed."""

from __future__ import annotations

from bertdemo.finetune.own_reading import PREPARING_STOPPED, sample_parts
from bertdemo.viz.text import literal

NAMES = {"finetuned": "fine-tuned", "majority": "majority class",
         "bag_of_words": "bag of words + logistic regression (C = 1)",
         "frozen_features": "frozen [CLS] vectors of the start + logistic regression (C = 1)",
         "word_memory": "per-word memory (the tag each word had most often in training; an unseen word the majority tag)"}
SHORT = {"finetuned": "fine-tuned", "majority": "majority", "bag_of_words": "bag of words (C = 1)",
         "frozen_features": "frozen [CLS] + LR", "word_memory": "word memory"}  # the table's row names: it fits a phone
KEY = {"bag_of_words": "*Bag of words*: a logistic regression on which words a text contains ({C}, chosen on "
                       "validation).",
       "frozen_features": "*Frozen [CLS] + LR*: the start's frozen [CLS] vectors with a logistic regression (the "
                          "paper's feature-based approach; {C}, chosen on validation).",
       "word_memory": "*Word memory*: the tag each word had most often in training (an unseen word: the majority "
                      "tag)."}  # what the split table's short row names stand for
STARTS = {"embedded": "the embedded pretrained model", "random": "random weights of the same shape (the control)"}


def _counts(result: dict) -> str:
    words = " words" if result.get("labels_per") == "word" else ""
    return ", ".join(f"{n}{words} {literal(name)}" for name, n in result["counts"].items())


def _chosen(result: dict) -> str:
    chosen = result.get("chosen")
    if not chosen:
        return ""
    curve = " · ".join(f"{e:g}: {v:.1%}" for e, v in chosen["curve"])
    stopped = " **Stopped during training**: the epochs scored before the stop chose it." if result.get("stopped") else ""
    return (f"\n\n**Epoch {chosen['epoch']:g} chosen on the validation split** ({chosen['on']} at each epoch's end: "
            f"{curve}); the model kept has that epoch's weights.{stopped}")


def result_markdown(result: dict | None, run_id: str = "") -> str:
    """What an own-data run found, for its owner (None: nothing yet)."""
    if not result:
        return "No result yet: start a run on your sentences (the result shows here when it ends)."
    start = STARTS.get(result.get("init", ""), "a pretraining run")
    words = result.get("labels_per") == "word"
    unit = "sentences (a tag per word)" if words else "examples"
    head = (f"**Run `{literal(run_id)}`** — {result['examples']} {unit} ({_counts(result)}), from "
            f"{literal(result.get('source', ''))}; fine-tuned from {start}.")
    kinds = ("finetuned", "majority", "word_memory") if words else ("finetuned", "majority", "bag_of_words",
                                                                    "frozen_features")
    kinds = tuple(k for k in kinds if k == "finetuned" or k in result.get("summary", result))  # older results
    if result.get("prepared") is False:
        return f"{head}\n\n{PREPARING_STOPPED}"
    if result.get("sample"):  # "Used 2,560 of the 5,000 examples" in bold, the why after it
        used, why = sample_parts(result["sample"])
        head += f"\n\n**{used}** {why}"
    if result["mode"] == "split" and result.get("stopped") and not result.get("chosen"):
        return (f"{head}\n\nStopped before the first epoch ended: nothing was scored on the validation split yet, so "
                "no model was kept and there is no score to report (the new head was still near its random start).")
    if result["mode"] == "split":
        sizes = result["sizes"]
        # short row names, and what each is (with its regression's C) in a line under the table: it fits a phone
        names = {**SHORT, "majority": "majority tag" if words else "majority class", "bag_of_words": "bag of words"}
        key = " ".join(KEY[k].format(C=f"C {result[k]['C']:g}" if "C" in result.get(k, {}) else "") for k in kinds
                       if k in KEY)
        metric = result.get("metric", "accuracy")
        rows = "\n".join(f"| {names[k]} | {_pct(result[k]['validation'])} | {_pct(result[k]['test'])} |"
                         for k in kinds)
        return (f"{head}\n\nA seeded{'' if words else ', stratified'} split: {sizes['train']} to train on, "
                f"{sizes['validation']} to choose on, {sizes['test']} to report on.{_chosen(result)}\n\n"
                f"| {metric}{' over words' if words else ''} | validation | test |\n|---|---|---|\n{rows}\n\n{key}\n\n"
                f"Read the **test** column: nothing was chosen on it.{_kept(result)}")
    done, folds = result["folds_done"], result["folds"]
    if done < folds:
        return f"{head}\n\nStopped after {done} of {folds} folds; no model was kept."
    rows = "\n".join(  # short names: the table fits a phone
        f"| {SHORT[k]} | **{s['mean']:.0%}** | ±{s['std']:.0%} | {' · '.join(f'{a:.0%}' for a in result['accuracy'][k])} |"
        for k, s in result["summary"].items())
    lines = [head, f"**{folds}-fold cross-validation** (under 200 examples, one split would be too small to trust): "
             f"each fold fine-tunes a fresh model on the other {folds - 1} folds and scores the held-out one; the "
             "landmarks are scored on the same folds.",
             ("Scored over words: the share of the held-out sentences' words given their tag.\n\n" if words else "")
             + f"| | accuracy | spread (sd) | each fold |\n|---|---|---|---|\n{rows}"]
    if words and result.get("macro_f1_summary"):
        lines.append("Macro-F1 over the tags (a rare tag counts as much as a common one), mean ± sd over folds: "
                     + "; ".join(f"{SHORT[k]} {s['mean']:.0%} ± {s['std']:.0%}"
                                 for k, s in result["macro_f1_summary"].items()) + ".")
    for name, c in result["comparisons"].items():
        landmark = "majority tag" if words and name == "majority" else NAMES[name].split(" +")[0].split(" (")[0]
        lead = f"{c['mean_diff'] * 100:+.0f} points against the {landmark}"
        if c["within_spread"]:
            lines.append(f"- {lead}: **within the spread** of the per-fold differences (±{c['std_diff'] * 100:.0f}); "
                         "these folds do not tell the two apart.")
        else:
            lines.append(f"- {lead}: beyond the spread of the per-fold differences (±{c['std_diff'] * 100:.0f}).")
    if result.get("kept") == "frozen_features":
        lines.append(f"The model kept (to classify and download) is **the frozen start with a logistic regression on "
                     f"its [CLS] vectors**, fitted on all {result['examples']} examples: it scored higher on the folds "
                     f"than fine-tuning.{FROZEN_WHY} Expect about its cross-validated accuracy, not a measured one.")
    else:
        lines.append(f"The model kept (to {'tag' if words else 'classify'} and download) was fine-tuned the same way "
                     f"on all {result['examples']} {'sentences' if words else 'examples'}: expect about the "
                     "cross-validated accuracy from it, not a measured one.")
    return "\n\n".join(lines)


FROZEN_IS = (" It is a stock `BertForSequenceClassification`: the start's encoder unchanged, its pooler set to pass "
             "the [CLS] vector through (0.01 × identity, where tanh is straight), the regression as its classifier.")
FROZEN_WHY = (" With this few examples that is usual: fine-tuning moves every one of the model's weights on a few "
              "dozen sentences, where a regression on fixed vectors has one weight per feature and label — the "
              "paper's feature-based approach (§5.3), which its Table 7 finds close to fine-tuning." + FROZEN_IS)


def _kept(result: dict) -> str:
    """What a split run says of its model beyond the chosen epoch: that its time budget cut fine-tuning too short to
    score, and that the model kept is the frozen features' classifier (chosen on validation, or the one trained)."""
    cut = result.get("cut_short")
    cut_line = (f"\n\n**Fine-tuning took only {cut['steps']:,} of its {cut['of']:,} steps** before the time budget "
                "ended: too few to mean anything, so it is not scored (—). Give it more time, fewer epochs or a smaller "
                "starting model.") if cut else ""
    if result.get("kept") != "frozen_features":
        return cut_line
    why = ("fine-tuning was not scored" if cut else
           "it scored higher than the fine-tuned model's best epoch on the validation split")
    return (f"{cut_line}\n\n**The model kept is the frozen start's classifier** (its regression fitted on the training "
            f"split): {why}." + (FROZEN_IS if cut else FROZEN_WHY))  # cut short: the budget, not the few examples


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def tagged_markdown(tagged: list[tuple[str, str, float]], model: str) -> str:
    """A sentence tagged word by word (each word, its tag and that tag's probability); the model named first."""
    rows = "\n".join(f"| {literal(word)} | **{literal(tag)}** | {prob:.0%} |" for word, tag, prob in tagged)
    return (f"Answered by `{literal(model)}` (each word's tag read at its first piece):\n\n"
            f"| word | tag | probability |\n|---|---|---|\n{rows}")
