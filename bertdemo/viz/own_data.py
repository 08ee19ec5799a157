"""The learner's own-data run in words: the cross-validated scores beside the landmarks on the same folds
(mean, spread, each fold), whether each lead is within the spread, or the split's validation and test figures.
Label names are the learner's: escaped as typed."""

from __future__ import annotations

from bertdemo.viz.text import literal

NAMES = {"finetuned": "fine-tuned", "majority": "majority class",
         "bag_of_words": "bag of words + logistic regression (C = 1)"}
STARTS = {"embedded": "the embedded pretrained model", "random": "random weights of the same shape (the control)"}


def _counts(result: dict) -> str:
    return ", ".join(f"{n} {literal(name)}" for name, n in result["counts"].items())


def result_markdown(result: dict | None, run_id: str = "") -> str:
    """What an own-data run found, for its owner (None: nothing yet)."""
    if not result:
        return "No result yet: start a run on your sentences (the result shows here when it ends)."
    start = STARTS.get(result.get("init", ""), "a pretraining run")
    head = (f"**Run `{literal(run_id)}`** — {result['examples']} examples ({_counts(result)}), from "
            f"{literal(result.get('source', ''))}; fine-tuned from {start}.")
    if result["mode"] == "split":
        sizes = result["sizes"]
        names = {**NAMES, "bag_of_words": f"bag of words + logistic regression (C {result['bag_of_words']['C']:g}, "
                                          "chosen on validation)"}
        rows = "\n".join(f"| {names[k]} | {_pct(result[k]['validation'])} | {_pct(result[k]['test'])} |"
                         for k in ("finetuned", "majority", "bag_of_words"))
        return (f"{head}\n\nA seeded, stratified split: {sizes['train']} to train on, {sizes['validation']} to "
                f"choose on, {sizes['test']} to report on.\n\n| | validation | test |\n|---|---|---|\n{rows}\n\n"
                "Read the **test** column: nothing was chosen on it.")
    done, folds = result["folds_done"], result["folds"]
    if done < folds:
        return f"{head}\n\nStopped after {done} of {folds} folds; no model was kept."
    short = {"finetuned": "fine-tuned", "majority": "majority", "bag_of_words": "bag of words (C = 1)"}
    rows = "\n".join(  # short names: the table fits a phone
        f"| {short[k]} | **{s['mean']:.0%}** | ±{s['std']:.0%} | {' · '.join(f'{a:.0%}' for a in result['accuracy'][k])} |"
        for k, s in result["summary"].items())
    lines = [head, f"**{folds}-fold cross-validation** (under 200 examples, one split would be too small to trust): "
             f"each fold fine-tunes a fresh model on the other {folds - 1} folds and scores the held-out one; the "
             "landmarks are scored on the same folds.",
             f"| | accuracy | spread (sd) | each fold |\n|---|---|---|---|\n{rows}"]
    for name, c in result["comparisons"].items():
        lead = f"{c['mean_diff'] * 100:+.0f} points against the {NAMES[name].split(' +')[0]}"
        if c["within_spread"]:
            lines.append(f"- {lead}: **within the spread** of the per-fold differences (±{c['std_diff'] * 100:.0f}); "
                         "these folds do not tell the two apart.")
        else:
            lines.append(f"- {lead}: beyond the spread of the per-fold differences (±{c['std_diff'] * 100:.0f}).")
    lines.append(f"The model kept (to classify and download) was fine-tuned the same way on all {result['examples']} "
                 "examples: expect about the cross-validated accuracy from it, not a measured one.")
    return "\n\n".join(lines)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"
