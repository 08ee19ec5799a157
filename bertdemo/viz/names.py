"""Drawing for "Find the names": a sentence tagged word by word, a names run's curve with its landmarks, its
report (test scores, the test split's errors) and which layer knows names beside the sentence-level probes.

Pure functions from plain values (lists, dicts, the probes' dataclasses) to HTML, Markdown and plotly dicts.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from bertdemo.viz.style import TEMPLATE
from bertdemo.viz.text import literal

_LAYOUT = {"template": TEMPLATE.to_plotly_json(), "margin": {"l": 56, "r": 16, "t": 40, "b": 48}}
_WORD = ("display:inline-block;margin:4px 3px 0 0;padding:2px 6px;border-radius:6px;text-align:center;"
         "line-height:1.25;border:1px solid {border};background:{background};color:#111827")
TASK_COLOURS = {"length": "#0ea5e9", "bigram_shift": "#f59e0b", "topic": "#10b981", "names": "#4f46e5"}


UNSURE_BELOW = 0.65  # a label's probability under which the box is dashed and called unsure
SCALE = ("How to read the percentages: with two labels, 50 % is a coin toss; below 65 % the model is unsure (a dashed "
         "box), 65–90 % fairly sure, above 90 % sure. A name the model is unsure of is often a word that only sometimes "
         "names someone (“match”, “may”, “rose”).")


def tagged_html(tagged: Sequence[tuple[str, str, float]], model: str) -> str:
    """Each word in a box, a name shaded by its probability, its label and probability under it; the model that
    answered named first."""
    boxes = []
    for word, label, prob in tagged:
        p_name = prob if label == "NAME" else 1 - prob
        if label == "NAME":
            background, border = f"rgba(79,70,229,{0.15 + 0.6 * prob:.2f})", "#4f46e5"
        else:
            background, border = "#f8fafc", "#cbd5e1"
        style = _WORD.format(border=border, background=background)
        if prob < UNSURE_BELOW:  # two labels: below this the model is nearly tossing a coin
            style += ";border-style:dashed"
        sure = " · unsure" if prob < UNSURE_BELOW else ""
        boxes.append(f"<span class='names-word' data-label='{label}' style='{style}' "
                     f"title='P(NAME) = {p_name:.3f}'>{html.escape(word)}<br>"
                     f"<small style='color:#334155'>{label} {prob:.0%}{sure}</small></span>")
    names = sum(label == "NAME" for _, label, _ in tagged)
    unsure = sum(prob < UNSURE_BELOW for _, _, prob in tagged)
    return (f"<div class='names-tagged'><p style='margin:0 0 4px 0;color:#475569'>Answered by "
            f"<code>{html.escape(model)}</code>: {names} of {len(tagged)} words called names, {unsure} of them unsure "
            f"(each box: the label the model gives the word's first piece, and its probability).</p>{''.join(boxes)}"
            f"<p style='margin:6px 0 0 0;color:#475569'>{SCALE}</p></div>")


def curve_spec(snap) -> dict:
    """A names run's validation F1 of NAME against training time, its test F1 at the end, and the landmarks'
    validation F1 (every word O: 0; per-word memory) as dashed lines."""
    data = [{"type": "scatter", "mode": "lines+markers", "x": [round(t, 1) for t in snap.eval_wall_s],
             "y": [round(f, 4) for f in snap.val_macro_f1], "name": f"from {literal(snap.init)}: validation",
             "line": {"color": "#4f46e5"}, "customdata": snap.eval_steps,
             "hovertemplate": "%{x:.0f} s (step %{customdata}) · F1 %{y:.1%}<extra></extra>"}]
    chosen = snap.names.get("chosen")
    if chosen:  # the step whose weights the run kept, chosen on this curve
        data.append({"type": "scatter", "mode": "markers", "x": [chosen["wall_s"]], "y": [round(chosen["f1"], 4)],
                     "name": f"kept: step {chosen['step']:,}, the best on validation",
                     "marker": {"color": "#4f46e5", "size": 14, "symbol": "circle-open", "line": {"width": 2}},
                     "hovertemplate": "kept: step " + f"{chosen['step']:,}" + " · F1 %{y:.1%}<extra></extra>"})
    if math.isfinite(snap.test_macro_f1) and snap.eval_wall_s:
        at = chosen["wall_s"] if chosen else round(snap.eval_wall_s[-1], 1)
        data.append({"type": "scatter", "mode": "markers", "x": [at],
                     "y": [round(snap.test_macro_f1, 4)], "name": "test, of the kept weights",
                     "marker": {"color": "#4f46e5", "size": 11, "symbol": "diamond"},
                     "hovertemplate": "test · F1 %{y:.1%}<extra></extra>"})
    marks = snap.names.get("landmarks", {})
    shapes, notes = [], []
    for key, name in (("word_memory", "per-word memory"), ("all_o", "every word O")):
        value = marks.get(key, {}).get("validation", {}).get("f1")
        if value is None:
            continue
        shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": value, "y1": value,
                       "line": {"color": "#64748b", "width": 1, "dash": "dash"}})
        notes.append({"xref": "paper", "x": 0, "xanchor": "left", "y": value, "yanchor": "bottom", "showarrow": False,
                      "text": f"{name} {value:.0%} (validation)", "font": {"size": 10, "color": "#475569"}})
    layout = {**_LAYOUT, "height": 320, "legend": {"orientation": "h", "y": -0.25},
              "title": {"text": "Find the names: word-level F1 of NAME"},
              "xaxis": {"title": {"text": "training seconds (pauses not counted)"}},
              "yaxis": {"range": [0, 1], "tickformat": ".0%"}, "shapes": shapes, "annotations": notes}
    return {"data": data, "layout": layout}


def _context(entry: dict, width: int = 6) -> str:
    words, i = entry["words"], entry["index"]
    left = " ".join(words[max(0, i - width):i])
    right = " ".join(words[i + 1:i + 1 + width])
    return f"{literal(left)} **{literal(words[i])}** {literal(right)}".strip()


def report_markdown(snap, random_reference: str = "") -> str:
    """A names run in words: where it ended against each landmark on the test split, and the test split's errors
    (names it missed, words it wrongly called names)."""
    report = snap.names
    if not report:
        return ""
    lines = []
    marks = report.get("landmarks", {})
    if "test" in report:
        test, entity = report["test"], report["test_entity"]
        memory = marks["word_memory"]["test"]["f1"]
        verdict = "above" if test["f1"] > memory else "level with" if test["f1"] == memory else "below"
        lines.append(
            f"**Test split** ({report['sentences']['test']:,} sentences, {test['words']:,} labelled words, "
            f"{test['true_names']:,} names): word-level F1 of NAME **{test['f1']:.1%}** (precision {test['precision']:.1%}, "
            f"recall {test['recall']:.1%}); entity-level F1 {entity['f1']:.1%} (a name counts when its whole run of "
            f"words is found). That is **{verdict}** per-word memory ({memory:.1%}: each word's most frequent tag in "
            f"training, unseen words O) and every word O (0 %)." + (f" {random_reference}" if random_reference else ""))
        chosen = report.get("chosen")
        if chosen:
            which = ("its last step" if chosen["step"] == chosen["last_step"]
                     else f"step {chosen['step']:,} of {chosen['last_step']:,} (epoch {chosen['epoch']:g})")
            lines.append(f"**Which weights:** {which}, chosen on the {chosen['on']} sentences: the best F1 of NAME "
                         f"({chosen['f1']:.1%}), then the lowest loss, among the evaluations after training began (the "
                         "start, step 0, is no choice: its head is untrained), as transformers' Trainer keeps with "
                         "`load_best_model_at_end=True`. The test split only scores that choice.")
        errors = report.get("errors", {})
        for key, title in (("missed", "Names it missed"), ("false", "Words it wrongly called names")):
            items = errors.get(key, [])
            total = errors.get(f"{key}_total", len(items))
            if not total:
                lines.append(f"**{title}:** none.")
                continue
            shown = "\n".join(f"- {_context(e)} — P(NAME) {e['p_name']:.2f}" for e in items)
            lines.append(f"**{title}** ({total:,}; the first {len(items)}):\n\n{shown}")
    elif marks:
        lines.append(f"Landmarks on the test split: per-word memory {marks['word_memory']['test']['f1']:.1%}, "
                     "every word O 0 %. The run's test scores come when it ends.")
    return "\n\n".join(lines)


def layers_spec(word_probe, sentence_probes: dict) -> dict:
    """Which layer knows what, on one chart: the names probe (test F1 of NAME per layer, per word) and each
    sentence-level probe computed for the same model (test accuracy, mean-pooled), solid; the random-weight
    controls dotted in the same colour."""
    data = []

    def line(name, values, colour, dash, what):
        data.append({"type": "scatter", "mode": "lines+markers", "x": list(range(len(values))),
                     "y": [round(v, 4) for v in values], "name": name, "line": {"color": colour, "dash": dash},
                     "hovertemplate": "layer %{x} · " + what + " %{y:.1%}<extra>" + name + "</extra>"})

    line("names (per word): F1 of NAME", word_probe.model.test_f1, TASK_COLOURS["names"], "solid", "F1")
    if word_probe.random is not None:
        line("names, random weights", word_probe.random.test_f1, TASK_COLOURS["names"], "dot", "F1")
    for task, probe in sentence_probes.items():
        if task == "names":
            continue
        colour = TASK_COLOURS.get(task, "#64748b")
        label = task.replace("_", " ")
        line(f"{label}: accuracy (majority {probe.majority_accuracy:.0%})", probe.model.mean, colour, "solid",
             "accuracy")
        if probe.random is not None:
            line(f"{label}, random weights", probe.random.mean, colour, "dot", "accuracy")
    layout = {**_LAYOUT, "height": 380, "legend": {"orientation": "h", "y": -0.3},
              "title": {"text": "Which layer knows what (test split; dotted: random weights)"},
              "xaxis": {"title": {"text": "layer (0 = embeddings)"}, "dtick": 1},
              "yaxis": {"range": [0, 1], "tickformat": ".0%", "title": {"text": "names: F1 · sentences: accuracy"}}}
    return {"data": data, "layout": layout}


PLATEAU_POINTS = 1.0  # a layer within this many points of the best validation F1 is on the plateau


def plateau_layer(scores) -> int:
    """The first layer whose validation F1 is within :data:`PLATEAU_POINTS` of the best layer's: where the curve
    flattens (the best layer itself when none comes close earlier)."""
    best = max(scores.val_f1)
    return next(i for i, f in enumerate(scores.val_f1) if f >= best - PLATEAU_POINTS / 100)


def layers_markdown(word_probe, model: str, others: Sequence[str]) -> str:
    layer, f1 = word_probe.model.best
    text = (f"Answered by {literal(model)}: for names, the layer chosen on validation F1 is **{layer}**, with "
            f"**{f1:.1%}** test F1 ({word_probe.n_train_words:,} training words, {word_probe.n_test_words:,} test words; "
            f"every word O: F1 0, accuracy {word_probe.majority_accuracy:.1%}).")
    plateau = plateau_layer(word_probe.model)
    if plateau < layer:  # the curve flattens before its best: where names are already known
        text += (f" The curve reaches its plateau at layer **{plateau}** (its validation F1 within "
                 f"{PLATEAU_POINTS:g} point of the best: {word_probe.model.test_f1[plateau]:.1%} test F1); the "
                 f"embeddings alone (layer 0) give {word_probe.model.test_f1[0]:.1%}.")
    if word_probe.random is not None:
        r_layer, r_f1 = word_probe.random.best
        text += f" Random weights of the same shape: {r_f1:.1%} (layer {r_layer}, chosen the same way)."
    missing = [t.replace("_", " ") for t in ("length", "bigram_shift", "topic") if t not in others]
    if missing:
        text += (" The sentence-level probes join this chart once computed for this model (pick the task above and "
                 f"press Probe every layer): not yet {', '.join(missing)}.")
    return text
