"""Pure drawing for fine-tuning: runs (the live one and earlier ones) -> curves with their landmarks,
the confusion matrix with per-topic accuracy, the sentence vectors before / after, the probe sentence's
topic probabilities, the class balance, the layer probes; and the status line.

Figures are plotly dicts of rounded numbers (the page redraws them every second while a run trains).
Accuracy curves are drawn against training time (training seconds from Start, evaluations included, pauses not counted), the axis on
which the starts are compared fairly: the same budget for each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bertdemo.finetune.config import is_random_start, run_of_init
from bertdemo.finetune.metrics import TASK as TOPIC_TASK, FinetuneSnapshot
from bertdemo.finetune.reference import Reference, percent_range
from bertdemo.viz.style import TEMPLATE, labels_px
from bertdemo.viz.text import html_code, literal

RUN_COLOURS = ["#4f46e5", "#f59e0b", "#10b981", "#ef4444", "#0ea5e9", "#a855f7"]
TOPIC_COLOURS = ["#4f46e5", "#f59e0b", "#10b981", "#ef4444", "#0ea5e9", "#a855f7", "#84cc16", "#ec4899",
                 "#64748b", "#14b8a6", "#b45309", "#1e293b"]
LANDMARK_NAMES = {  # baseline key -> what the chart calls it
    "majority": "majority class",
    "bag_of_words": "bag of words + logistic regression",
    "frozen_probe": "linear probe on the frozen embedded model",
}
LANDMARK_AXIS = "accuracy"  # short: a long title ran off the panel's height and over the loss panel's ticks
# what each mark on the accuracy panel is: said in the line under the chart (ui/finetune_tab.py), which a
# phone's one-column layout keeps readable (a key inside the figure met the legend there)
ACCURACY_KEY = "lines: validation · dots: macro-F1 · ◆ and dashes: test"
_LAYOUT = {"template": TEMPLATE.to_plotly_json(), "margin": {"l": 56, "r": 16, "t": 40, "b": 48}}


def _r(values: Sequence[float], digits: int = 4) -> list:
    return [None if v is None or not math.isfinite(v) else round(float(v), digits) for v in values]


def status_markdown(snap: FinetuneSnapshot | None, busy_with_pretraining: bool = False,
                    baselines: dict[str, float] | None = None, reference: Reference | None = None,
                    partner: FinetuneSnapshot | None = None) -> str:
    """What the fine-tuning run is doing, in a few lines (what it started from, what is new in the model); once
    it ends, where its test accuracy stands against each landmark (``baselines``: their test accuracy) and the
    stored random-weight ``reference`` (:func:`landmark_verdict`), and for a run from a pretraining run of the
    learner's, beside its ``partner`` (:func:`pair_verdict`). Every figure names what it scores: the fixed
    validation sample while the run goes, the whole splits at the end (never a figure before it is measured)."""
    if snap is None:
        if busy_with_pretraining:
            return "Another run holds this machine's training slot; fine-tuning can start when it ends."
        return "No fine-tuning run yet on this server. Pick a starting model, then **Start fine-tuning**."
    head = f"**{snap.status.upper()}** · run {html_code(snap.run_id)} · from {literal(snap.init_label or snap.init)}"
    if snap.param_count:
        head += f" ({snap.param_count:,} parameters) · {literal(snap.device)}"
    lines = [head]
    if snap.step or snap.total_steps:
        steps = f"{snap.step:,} / {snap.total_steps:,}" if snap.total_steps else f"{snap.step:,}"  # own data: folds
        body = f"step **{steps}** · epoch {snap.epoch:.2f} · {snap.elapsed_s:.0f} s"
        whole = math.isfinite(snap.val_accuracy_all)
        if snap.val_accuracy and not whole:  # at the end the whole split's figure replaces the sample's
            body += (f" · validation accuracy **{snap.val_accuracy[-1]:.1%}**, macro-F1 {snap.val_macro_f1[-1]:.3f}"
                     f" (step {snap.eval_steps[-1]:,}, on a fixed sample of {snap.eval_examples:,} validation examples)")
        lines.append(body)
    if math.isfinite(snap.val_accuracy_all):
        end = (f"At the end, the whole validation split: accuracy **{snap.val_accuracy_all:.1%}**, macro-F1 "
               f"{snap.val_macro_f1_all:.3f}")
        if math.isfinite(snap.test_accuracy):
            end += (f"; the test split (looked at once): accuracy **{snap.test_accuracy:.1%}**, macro-F1 "
                    f"{snap.test_macro_f1:.3f}.")
        else:
            end += "; the test split is being scored…"
        lines.append(end)
    if snap.message:
        lines.append(literal(snap.message))
    if snap.note:  # the server's own words and numbers (no visitor's text in it)
        lines.append(snap.note)
    for verdict in (landmark_verdict(snap, baselines or {}, reference), pair_verdict(snap, partner, reference)):
        if verdict:
            lines.append(verdict)
    return "  \n".join(lines)


def run_label(run_id: str, init: str, live: bool = False) -> str:
    """A run's name in a legend: when it started (its id begins ``YYYYmmdd-HHMMSS``) and what from."""
    when = f"{run_id[9:11]}:{run_id[11:13]}:{run_id[13:15]}" if len(run_id) >= 15 and run_id[8:9] == "-" else run_id
    return f"{'live run' if live else 'run ' + when} (from {init})"


def _points(diff: float) -> str:
    return f"{abs(diff) * 100:.1f} point{'s' if round(abs(diff) * 100, 1) != 1 else ''}"


def landmark_verdict(snap: FinetuneSnapshot | None, baselines: dict[str, float],
                     reference: Reference | None = None) -> str:
    """Where an ended run's test accuracy stands against each landmark (majority class, bag of words, the frozen
    probe: their test accuracy) and the stored random-weight reference, in words; why, when it ends below the
    frozen probe. "" before the run has a test accuracy."""
    if snap is None or not math.isfinite(snap.test_accuracy):
        return ""
    acc = snap.test_accuracy
    parts = []
    for key in ("majority", "bag_of_words", "frozen_probe"):
        if key in baselines:
            value = baselines[key]
            side = "above" if acc > value else ("level with" if acc == value else "**below**")
            gap = "" if acc == value else f" by {_points(acc - value)}"
            parts.append(f"{side} the {LANDMARK_NAMES[key]} ({value:.1%}){gap}")
    if reference is not None and reference.runs and not run_of_init(snap.init):  # the embedded model's shape
        low, high = reference.test_range()
        if acc > high:
            where = f"above random weights of the same shape ({percent_range(low, high)}, the stored reference) by {_points(acc - high)}"
        elif acc < low:
            where = f"**below** random weights of the same shape ({percent_range(low, high)}, the stored reference)"
        else:
            where = f"within the range of random weights of the same shape ({percent_range(low, high)}, the stored reference)"
        parts.append(where)
    if not parts:
        return ""
    text = f"**Where it ended** (test accuracy {acc:.1%}): " + "; ".join(parts) + "."
    probe = baselines.get("frozen_probe")
    if probe is not None and acc < probe:
        text += (f" It ended below the frozen probe: the probe trains one linear layer on fixed vectors, fine-tuning "
                 f"moves every weight and needs more steps — this run made {snap.step:,} of its {snap.total_steps:,} "
                 "planned steps in its budget (a busy machine makes fewer steps in the same time). A longer time "
                 "budget lets it pass the probe.")
    return text


def pair_verdict(snap: FinetuneSnapshot | None, partner: FinetuneSnapshot | None,
                 reference: Reference | None = None) -> str:
    """What a learner's pretraining run bought, in words, once both halves of its pair have a test accuracy: the run
    fine-tuned from it and its control (random weights of its shape, the same seed, data order and budget), the gap
    between them, and how far one seed can be trusted (the stored reference's spread over seeds); before the partner
    has ended, how to get it. "" for any other start, or before this run has a test accuracy."""
    if snap is None or not run_of_init(snap.init) or not math.isfinite(snap.test_accuracy):
        return ""
    if partner is None:
        other = ("the same start from the run itself" if is_random_start(snap.init)
                 else "its control, random weights of this run's shape")
        return (f"**What your pretraining run bought** is read against {other}, with the same seed "
                f"({snap.settings.get('seed', '')}): it has not ended here yet — pick it in **Start from** and start "
                "it with the same settings (the stored random-weight runs are of the embedded model's shape, no "
                "control for this one).")
    own, control = (partner, snap) if is_random_start(snap.init) else (snap, partner)
    gap = own.test_accuracy - control.test_accuracy
    seed = own.settings.get("seed", "")
    text = (f"**What your pretraining run bought** (test accuracy, seed {seed}): fine-tuned from it "
            f"({html_code(own.run_id)}) **{own.test_accuracy:.1%}**; from random weights of its shape "
            f"({html_code(control.run_id)}: the same seed, data order and time budget) {control.test_accuracy:.1%}: "
            f"**{gap * 100:+.1f} points**{' for pretraining' if gap > 0 else ''}.")
    if reference is not None and len(reference.runs) > 1:
        low, high = reference.test_range()
        spread = high - low
        if math.isfinite(spread):
            trust = ("larger than" if abs(gap) > spread else "**within**")
            text += (f" One seed each: the stored random-weight runs of the embedded model's shape differ by "
                     f"{spread * 100:.1f} points between seeds ({len(reference.runs)} seeds), so this gap is {trust} "
                     "what a seed alone moves; start both again with another seed to see it hold.")
    return text


def new_weights_markdown(snap: FinetuneSnapshot | None) -> str:
    """The "Some weights … were newly initialized" report of transformers, explained for this run."""
    if snap is None or not snap.new_weights:
        return ""
    if snap.init == "random":
        return ("**Everything is new:** this run starts from random weights of the same shape — the control that "
                "shows what pretraining bought.")
    parts = ", ".join(html_code(g) for g in snap.new_weights)
    text = (f"**Newly initialized:** {parts}. Loading a masked-LM checkpoint into `BertForSequenceClassification` "
            "prints transformers' warning *\"Some weights of BertForSequenceClassification were not initialized from "
            "the model checkpoint … and are newly initialized\"*: the classifier (a Linear layer from the [CLS] "
            f"vector to the {len(snap.labels)} topics) never existed before this task")
    if any("pooler" in g for g in snap.new_weights):
        text += (", and the pooler (a dense layer + tanh on [CLS]) is new because this checkpoint was pretrained "
                 "without next-sentence prediction, the task that trains it")
    return text + ". Everything else starts from the pretrained weights; fine-tuning updates all of them."


REFERENCE_COLOUR = "#94a3b8"


def reference_traces(reference: Reference) -> list[dict]:
    """The stored random-weight runs on the accuracy panel: one thin grey line per seed (one legend entry, named
    as a stored measurement with its date and seeds), each run's test accuracy as an open diamond."""
    data = []
    for i, run in enumerate(reference.runs):
        data.append({"type": "scatter", "mode": "lines", "x": _r(run.eval_wall_s, 1), "y": _r(run.val_accuracy),
                     "name": reference.label(), "legendgroup": "reference", "showlegend": i == 0,
                     "line": {"color": REFERENCE_COLOUR, "width": 1.5, "dash": "dash"}, "xaxis": "x2", "yaxis": "y2",
                     "hovertemplate": f"%{{x:.0f}} s · accuracy %{{y:.1%}}<extra>reference, seed {run.seed}</extra>"})
        if math.isfinite(run.test_accuracy) and run.eval_wall_s:
            data.append({"type": "scatter", "mode": "markers", "x": _r(run.eval_wall_s[-1:], 1),
                         "y": _r([run.test_accuracy]), "name": f"reference seed {run.seed}: test",
                         "legendgroup": "reference", "showlegend": False, "xaxis": "x2", "yaxis": "y2",
                         "marker": {"color": REFERENCE_COLOUR, "size": 8, "symbol": "diamond-open"},
                         "hovertemplate": f"test split · accuracy %{{y:.1%}}<extra>reference, seed {run.seed}</extra>"})
    return data


def curves_spec(runs: Sequence[tuple[str, FinetuneSnapshot]], baselines: dict[str, float],
                reference: Reference | None = None) -> dict:
    """Train loss (smoothed) and validation accuracy / macro-F1 against training time, one colour per run, each
    ended run's test accuracy as a diamond at its last point; the task's landmarks (their test accuracy, each
    chosen on validation) as labelled horizontal lines on the accuracy panel, to compare with the diamonds; the
    stored random-weight ``reference`` runs (:func:`reference_traces`) beside them. Only topic runs are drawn: a
    names or own-data run's word accuracy or labels against the topic task's lines would mislead (each has its
    own chart)."""
    data: list[dict] = [] if reference is None else reference_traces(reference)
    runs = [(label, s) for label, s in runs if s.task == TOPIC_TASK]
    for i, (label, s) in enumerate(runs):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        data.append({"type": "scatter", "mode": "lines", "x": _r(s.wall_s, 1), "y": _r(s.train_loss_smooth),
                     "name": f"{label}: train loss", "line": {"color": colour, "width": 2}, "legendgroup": f"r{i}",
                     "xaxis": "x", "yaxis": "y", "showlegend": False,
                     "hovertemplate": "%{x:.0f} s · train loss %{y:.3f}<extra>" + literal(label) + "</extra>"})
        data.append({"type": "scatter", "mode": "lines+markers", "x": _r(s.eval_wall_s, 1), "y": _r(s.val_accuracy),
                     "name": f"{label}", "line": {"color": colour, "width": 2}, "marker": {"size": 5},
                     "legendgroup": f"r{i}", "xaxis": "x2", "yaxis": "y2",
                     "customdata": s.eval_steps,
                     "hovertemplate": "%{x:.0f} s (step %{customdata}) · accuracy %{y:.1%}<extra>"
                                      + literal(label) + "</extra>"})
        data.append({"type": "scatter", "mode": "lines", "x": _r(s.eval_wall_s, 1), "y": _r(s.val_macro_f1),
                     "name": f"{label}: macro-F1", "line": {"color": colour, "width": 1, "dash": "dot"},
                     "legendgroup": f"r{i}", "xaxis": "x2", "yaxis": "y2", "showlegend": False,
                     "hovertemplate": "%{x:.0f} s · macro-F1 %{y:.3f}<extra>" + literal(label) + "</extra>"})
        if math.isfinite(s.test_accuracy) and s.eval_wall_s:
            data.append({"type": "scatter", "mode": "markers", "x": _r(s.eval_wall_s[-1:], 1),
                         "y": _r([s.test_accuracy]), "name": f"{label}: test", "legendgroup": f"r{i}",
                         "marker": {"color": colour, "size": 10, "symbol": "diamond"}, "xaxis": "x2", "yaxis": "y2",
                         "showlegend": False, "hovertemplate": "test split, at the end · accuracy %{y:.1%}<extra>"
                                                                + literal(label) + "</extra>"})
    if not runs:  # before any run: an empty trace on each panel, so both draw their axes (plotly leaves a panel
        # without a trace blank: half the chart was white, a screen of it on a phone)
        data += [{"type": "scatter", "x": [], "y": [], "xaxis": x, "yaxis": y, "showlegend": False, "hoverinfo": "skip"}
                 for x, y in (("x", "y"), ("x2", "y2"))[:1 if reference is not None else 2]]
    shapes, notes = [], []
    for i, (name, value) in enumerate(sorted(baselines.items(), key=lambda kv: kv[1])):
        shapes.append({"type": "line", "xref": "x2 domain", "x0": 0, "x1": 1, "yref": "y2", "y0": value, "y1": value,
                       "line": {"color": "#64748b", "width": 1, "dash": "dash"}})
        notes.append({"xref": "x2 domain", "x": 0.0 if i % 2 == 0 else 1.0, "xanchor": "left" if i % 2 == 0 else "right",
                      "yref": "y2", "y": value, "yanchor": "bottom" if i % 2 == 0 else "top",  # neighbours never overlap
                      "text": f"{LANDMARK_NAMES.get(name, name)} {value:.0%} (test)", "showarrow": False,
                      "font": {"size": 10, "color": "#475569"}})
    layout = {**_LAYOUT, "height": 420, "legend": {"orientation": "h", "y": -0.18},
              "xaxis": {"domain": [0, 0.36], "title": {"text": "training seconds (pauses not counted)"}},
              "yaxis": {"domain": [0, 1], "title": {"text": "train loss (smoothed)"}, "rangemode": "tozero"},
              "xaxis2": {"domain": [0.46, 1], "anchor": "y2", "title": {"text": "training seconds (pauses not counted)"}},
              "yaxis2": {"domain": [0, 1], "anchor": "x2", "title": {"text": LANDMARK_AXIS},
                         "range": [0, 1],
                         "tickformat": ".0%"},
              "shapes": shapes, "annotations": notes}
    return {"data": data, "layout": layout}



def confusion_spec(snap: FinetuneSnapshot | None) -> dict:
    """The final validation confusion matrix (rows: true topic, share of the row; hover: counts) with each
    topic's accuracy in its row label."""
    if snap is None or not snap.confusion:
        return _empty("The confusion matrix appears when the run ends.")
    acc = snap.per_topic_accuracy
    short = short_names(snap.labels)  # the axes name each topic by its first word (room on a phone); hover: in full
    rows = [f"{name} ({a:.0%})" for name, a in zip(short, acc)]
    shares = [[round(c / max(1, sum(row)), 3) for c in row] for row in snap.confusion]
    full = [[[snap.labels[i], snap.labels[j], n] for j, n in enumerate(row)] for i, row in enumerate(snap.confusion)]
    trace = {"type": "heatmap", "z": shares, "x": short, "y": rows, "customdata": full,
             "colorscale": [[0, "#f8fafc"], [1, "#1e3a8a"]], "zmin": 0, "zmax": 1,
             "hovertemplate": "true %{customdata[0]}<br>predicted %{customdata[1]}<br>%{customdata[2]} examples "
                              "(%{z:.0%} of the row)<extra></extra>"}
    layout = {**_LAYOUT, "height": 460, "margin": {"l": labels_px(rows) + 12, "r": 16, "t": 40,
                                                   "b": labels_px(short) // 2 + 40},
              "title": {"text": "Validation confusion matrix (row: true topic, its accuracy in brackets)"},
              "yaxis": {"autorange": "reversed"}, "xaxis": {"tickangle": -40}}
    return {"data": [trace], "layout": layout}


def pca_spec(snap: FinetuneSnapshot | None) -> dict:
    """The validation examples' sentence vectors (the pooled [CLS] the classifier reads), in 2D by PCA, before
    and after fine-tuning, coloured by topic; hover shows the sentence."""
    if snap is None or not snap.pca_before:
        return _empty("The sentence vectors appear once the run has evaluated its starting model.")
    data = []
    panels = [("before", snap.pca_before, "x", "y")] + ([("after", snap.pca_after, "x2", "y2")] if snap.pca_after else [])
    for panel, points, xa, ya in panels:
        for c, name in enumerate(snap.labels):
            idx = [i for i, y in enumerate(snap.pca_labels[:len(points)]) if y == c]
            data.append({"type": "scattergl", "mode": "markers", "name": name, "legendgroup": name,
                         "showlegend": panel == "before", "x": [points[i][0] for i in idx],
                         "y": [points[i][1] for i in idx], "xaxis": xa, "yaxis": ya,
                         "marker": {"size": 5, "color": TOPIC_COLOURS[c % len(TOPIC_COLOURS)], "opacity": 0.75},
                         "text": [snap.pca_texts[i][:120] for i in idx],
                         "hovertemplate": "%{text}<extra>" + literal(name) + "</extra>"})
    layout = {**_LAYOUT, "height": 420, "legend": {"orientation": "h", "y": -0.12},
              "xaxis": {"domain": [0, 0.47], "title": {"text": "before fine-tuning (PC 1)"}, "showticklabels": False},
              "yaxis": {"domain": [0, 1], "title": {"text": "PC 2"}, "showticklabels": False},
              "xaxis2": {"domain": [0.53, 1], "anchor": "y2", "title": {"text": "after fine-tuning (PC 1)"}, "showticklabels": False},
              "yaxis2": {"domain": [0, 1], "anchor": "x2", "showticklabels": False}}
    return {"data": data, "layout": layout}


def probe_spec(snap: FinetuneSnapshot | None, top: int = 4) -> dict:
    """P(topic | the probe sentence) at each evaluation, for the topics that ever reached the ``top`` largest."""
    if snap is None or not snap.probe_probs:
        return _empty("The probe sentence's topic probabilities appear at the first evaluation.")
    latest = snap.probe_probs[-1]
    ranked = sorted(range(len(snap.labels)), key=lambda c: -max(p[c] for p in snap.probe_probs))[:top]
    data = [{"type": "scatter", "mode": "lines+markers", "x": _r(snap.eval_wall_s, 1),
             "y": _r([p[c] for p in snap.probe_probs], 3), "name": f"{snap.labels[c]} ({latest[c]:.0%} now)",
             "line": {"color": TOPIC_COLOURS[c % len(TOPIC_COLOURS)]},
             "hovertemplate": "%{x:.0f} s · P = %{y:.1%}<extra>" + literal(snap.labels[c]) + "</extra>"}
            for c in ranked]
    layout = {**_LAYOUT, "height": 300, "yaxis": {"range": [0, 1], "tickformat": ".0%", "title": {"text": "P(topic)"}},
              "xaxis": {"title": {"text": "training seconds (pauses not counted)"}}, "legend": {"orientation": "h", "y": -0.3}}
    return {"data": data, "layout": layout}


def balance_spec(balance: dict[str, dict[str, int]]) -> dict:
    """Examples per topic in each split (stacked bars)."""
    colours = {"train": "#4f46e5", "validation": "#f59e0b", "test": "#10b981"}
    data = [{"type": "bar", "name": split, "y": list(counts), "x": list(counts.values()), "orientation": "h",
             "marker": {"color": colours.get(split, "#64748b")}} for split, counts in balance.items()]
    layout = {**_LAYOUT, "height": 340, "barmode": "stack", "margin": {"l": 150, "r": 16, "t": 30, "b": 40},
              "yaxis": {"autorange": "reversed"}, "xaxis": {"title": {"text": "examples"}},
              "legend": {"orientation": "h", "y": 1.1}}
    return {"data": data, "layout": layout}


def short_names(labels: Sequence[str]) -> list[str]:
    """Each label's first word, or the whole label where two would share their first word."""
    first = [label.split()[0] for label in labels]
    return [f if first.count(f) == 1 else label for f, label in zip(first, labels)]


def _empty(text: str) -> dict:
    return {"data": [], "layout": {**_LAYOUT, "height": 200, "xaxis": {"visible": False}, "yaxis": {"visible": False},
                                   "annotations": [{"text": text, "showarrow": False, "xref": "paper", "yref": "paper",
                                                    "x": 0.5, "y": 0.5, "font": {"size": 13, "color": "#64748b"}}]}}


def layer_probe_spec(probe) -> dict:
    """A task probed at every layer (a layer_probes.TaskProbe): test accuracy of the linear probe on mean-pooled
    and [CLS] features of the model, the same on a random-weight model of the same shape, and the majority class."""
    layers = list(range(len(probe.model.mean)))
    lines = [("model, mean-pooled", probe.model.mean, "#4f46e5", "solid"),
             ("model, [CLS]", probe.model.cls, "#4f46e5", "dot")]
    if probe.random is not None:
        lines += [("random weights, mean-pooled", probe.random.mean, "#94a3b8", "solid"),
                  ("random weights, [CLS]", probe.random.cls, "#94a3b8", "dot")]
    data = [{"type": "scatter", "mode": "lines+markers", "x": layers, "y": _r(values), "name": name,
             "line": {"color": colour, "dash": dash}, "hovertemplate": "layer %{x} · %{y:.1%}<extra>" + name + "</extra>"}
            for name, values, colour, dash in lines]
    layout = {**_LAYOUT, "height": 320, "legend": {"orientation": "h", "y": -0.25},
              "title": {"text": f"{probe.task.replace('_', ' ')} ({probe.kind}): test accuracy of a linear probe"},
              "xaxis": {"title": {"text": "layer (0 = embeddings)"}, "dtick": 1},
              "yaxis": {"range": [0, 1], "tickformat": ".0%"},
              "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": probe.majority_accuracy,
                          "y1": probe.majority_accuracy, "line": {"color": "#64748b", "dash": "dash", "width": 1}}],
              "annotations": [{"xref": "paper", "x": 1, "xanchor": "right", "y": probe.majority_accuracy,
                               "yanchor": "bottom", "showarrow": False, "font": {"size": 10, "color": "#475569"},
                               "text": f"majority class {probe.majority_accuracy:.0%}"}]}
    return {"data": data, "layout": layout}


ENOUGH_CHECKPOINTS = 4  # fewer points than this cannot say when word order arrived


def checkpoints_note(n: int, kept: int) -> str:
    """How many points the checkpoint probe has (a figure title: short lines), and why when too few to answer."""
    text = f"{n} checkpoint{'s' if n != 1 else ''} on disk: {n} point{'s' if n != 1 else ''}"
    if n >= ENOUGH_CHECKPOINTS:
        return text
    return (f"{text}, too few to say when.<br>This server keeps a run's latest checkpoints and a few log-spaced "
            f"early ones, at most {kept} (--keep-checkpoints, --keep-milestones); a short run has fewer.")


def checkpoint_probe_spec(results, steps_label: str = "pretraining step", note: str = "") -> dict:
    """The bigram-shift probe of each checkpoint of a run against its step, at the layer chosen on validation
    and drawn with its test accuracy: when word order arrived. ``note`` (e.g. :func:`checkpoints_note`) is the
    figure's title."""
    if not results:
        return _empty("Pick a pretraining run with checkpoints.")
    xs = [r.step if r.step is not None else i for i, r in enumerate(results)]
    best = [r.best_accuracy for r in results]
    layers = [r.best_layer for r in results]
    data = [{"type": "scatter", "mode": "lines+markers", "x": xs, "y": _r(best),
             "name": "best layer on validation, test accuracy", "customdata": layers, "line": {"color": "#4f46e5"},
             "hovertemplate": "step %{x} · layer %{customdata} · test %{y:.1%}<extra></extra>"}]
    majority = results[0].majority_accuracy
    layout = {**_LAYOUT, "height": 280, "xaxis": {"title": {"text": steps_label}},
              "title": {"text": note, "font": {"size": 12}},
              "yaxis": {"range": [0, 1], "tickformat": ".0%", "title": {"text": "bigram shift, test accuracy"}},
              "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": majority, "y1": majority,
                          "line": {"color": "#64748b", "dash": "dash", "width": 1}}]}
    return {"data": data, "layout": layout}


def probabilities_markdown(labels: Sequence[str], probs: Sequence[float], model: str, top: int = 5) -> str:
    """The top topics for a sentence, naming the model that answered."""
    ranked = sorted(zip(probs, labels), reverse=True)[:top]
    rows = "\n".join(f"| {literal(name)} | {p:.1%} |" for p, name in ranked)
    return f"Answered by {html_code(model)}:\n\n| topic | probability |\n|---|---|\n{rows}"


def layer_change_spec(change) -> dict:
    """What fine-tuning changed per layer (a layer_change.LayerChange): the relative weight change as bars (top)
    and the linear CKA of the validation sentences' vectors before vs after as a line (bottom: 1 = unchanged)."""
    if change is None:
        return _empty("Pick a fine-tuning run, then press the button.")
    layers = list(change.layers)
    data = [{"type": "bar", "x": layers, "y": _r(change.weight_change), "name": "relative weight change",
             "marker": {"color": "#4f46e5"}, "xaxis": "x", "yaxis": "y",
             "hovertemplate": "%{x} · ‖ΔW‖/‖W‖ = %{y:.2%}<extra></extra>"},
            {"type": "scatter", "mode": "lines+markers", "x": layers, "y": _r(change.cka),
             "name": "CKA before vs after", "line": {"color": "#f59e0b"}, "xaxis": "x2", "yaxis": "y2",
             "hovertemplate": "%{x} · linear CKA %{y:.3f}<extra></extra>"}]
    layout = {**_LAYOUT, "height": 440, "showlegend": False,
              "title": {"text": f"What fine-tuning changed in {literal(change.model)}", "font": {"size": 13}},
              "xaxis": {"domain": [0, 1], "anchor": "y", "showticklabels": False},
              "yaxis": {"domain": [0.56, 1], "title": {"text": "‖ΔW‖ / ‖W‖"}, "tickformat": ".1%",
                        "rangemode": "tozero"},
              "xaxis2": {"domain": [0, 1], "anchor": "y2"},
              "yaxis2": {"domain": [0, 0.44], "title": {"text": "CKA (1 = same)"}, "range": [0, 1.02]}}
    return {"data": data, "layout": layout}


def layer_change_markdown(change) -> str:
    """The text twin of :func:`layer_change_spec`: every number of the chart in a table, what it means, and the
    forgetting measured (the masked-LM loss with the original head, before and after)."""
    if change is None:
        return ""
    rows = "\n".join(f"| {name} | {w:.2%} | {c:.3f} |" for name, w, c in zip(change.layers, change.weight_change, change.cka))
    most_w = change.layers[max(range(len(change.weight_change)), key=lambda i: change.weight_change[i])]
    text = (f"Answered for {html_code(change.model)} against its start, {literal(change.start)} (rebuilt from the "
            f"run's saved settings), on {change.sentences:,} validation sentences (never trained on). The weights "
            f"moved most in **{most_w}**; the sentence vectors (mean over each sentence's pieces) changed most at "
            f"**{change.layers[change.most_changed]}** (lowest CKA). Linear CKA is 1 when the vectors after are the "
            "vectors before turned and scaled; the lower, the more the task reshaped that layer.\n\n"
            "| layer | relative weight change ‖W_after − W_before‖ / ‖W_before‖ | linear CKA before vs after |\n"
            f"|---|---|---|\n{rows}\n\n")
    if change.mlm_loss_before is not None and change.mlm_loss_after is not None:
        ratio = math.exp(change.mlm_loss_after - change.mlm_loss_before)
        text += (f"**Forgetting, measured:** the masked-LM loss with the original head on {change.masked_pieces:,} "
                 f"masked pieces (15 %, seeded, the same for both) of the same sentences was "
                 f"**{change.mlm_loss_before:.3f}** before fine-tuning and **{change.mlm_loss_after:.3f}** after "
                 f"(perplexity × {ratio:.2f}): "
                 + ("the encoder now serves the task, and its old head reads its vectors less well."
                    if change.mlm_loss_after > change.mlm_loss_before else
                    "fine-tuning cost no masked-LM skill on these sentences."))
    else:
        text += f"*{literal(change.note)}*"
    return text


def gallery_spec(runs: Sequence[tuple[str, FinetuneSnapshot]]) -> dict:
    """Several fine-tuning runs overlaid, one colour each (a teacher's gallery of the class's runs): the train
    loss (smoothed) and each run's validation score against training seconds, every value the run's own
    recorded history. Any task: the score is the validation accuracy, a names run's the F1 of NAME (its word
    accuracy flatters: nearly every word is O), and the hover says which."""
    data: list[dict] = []
    for i, (label, s) in enumerate(runs):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        names = s.task == "names"
        score, what = (s.val_macro_f1, "F1 of NAME") if names else (s.val_accuracy, "accuracy")
        data.append({"type": "scatter", "mode": "lines", "x": _r(s.wall_s, 1), "y": _r(s.train_loss_smooth),
                     "name": f"{label}: train loss", "line": {"color": colour, "width": 2}, "legendgroup": f"r{i}",
                     "xaxis": "x", "yaxis": "y", "showlegend": False,
                     "hovertemplate": "%{x:.0f} s · train loss %{y:.3f}<extra>" + literal(label) + "</extra>"})
        data.append({"type": "scatter", "mode": "lines+markers", "x": _r(s.eval_wall_s, 1), "y": _r(score),
                     "name": label, "line": {"color": colour, "width": 2}, "marker": {"size": 5},
                     "legendgroup": f"r{i}", "xaxis": "x2", "yaxis": "y2", "customdata": s.eval_steps,
                     "hovertemplate": f"%{{x:.0f}} s (step %{{customdata}}) · {what} %{{y:.1%}}<extra>"
                                      + literal(label) + "</extra>"})
    if not runs:  # an empty trace on each panel, so both draw their axes
        data += [{"type": "scatter", "x": [], "y": [], "xaxis": x, "yaxis": y, "showlegend": False, "hoverinfo": "skip"}
                 for x, y in (("x", "y"), ("x2", "y2"))]
    layout = {**_LAYOUT, "height": 420, "legend": {"orientation": "h", "y": -0.18},
              "xaxis": {"domain": [0, 0.4], "title": {"text": "training seconds"}},
              "yaxis": {"domain": [0, 1], "title": {"text": "train loss (smoothed)"}, "rangemode": "tozero"},
              "xaxis2": {"domain": [0.52, 1], "anchor": "y2", "title": {"text": "training seconds"}},
              "yaxis2": {"domain": [0, 1], "anchor": "x2", "range": [0, 1], "tickformat": ".0%",
                         "title": {"text": "validation accuracy (names: F1)"}}}
    return {"data": data, "layout": layout}
