"""Drawing the masked LM beside the left-to-right LM, the heads' labels and a run's cost.

Plotly dicts (no figure object built) and Markdown twins of every chart; every view names the model
that answered. Model names and sentences are escaped (:func:`~bertdemo.viz.text.literal`,
:func:`~bertdemo.viz.text.plotly_text`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from bertdemo.english import plural
from bertdemo.models.twin_curve import BOTH_NEIGHBOURS
from bertdemo.viz.bars import percent
from bertdemo.viz.text import Code, html_code, literal, md_table, plotly_text
from bertdemo.viz.twin_curve import LANDMARK_COLORS, LTR_COLOR, MLM_COLOR, loss_text

if TYPE_CHECKING:
    from bertdemo.explore.head_roles import HeadRoles, RolesOverSteps
    from bertdemo.explore.twins import ClozeRanks, HeldoutComparison, TwinGuesses
    from bertdemo.pretrain.cost import TrainingCost

ROLE_MARKS = {"previous word": "← prev", "next word": "next →", "same word": "self", "[CLS]": "[CLS]",
              "[SEP]": "[SEP]", "broad": "broad", "mixed": "·"}
GRID_MARKS = {"previous word": "←", "next word": "→", "same word": "=", "[CLS]": "C", "[SEP]": "S", "broad": "≈",
              "mixed": "·"}  # one character per cell: the grid fits a phone's width
ROLE_COLORS = ("#fca5a5", "#93c5fd", "#fde68a", "#c4b5fd", "#86efac", "#e5e7eb", "#ffffff")  # in ROLE_MARKS' order


# --- held-out words by position ----------------------------------------------------------------------------
def heldout_spec(result: HeldoutComparison) -> dict:
    """Loss (nats per word) by the word's position in its sentence: the two models solid, the landmarks dashed."""
    data = []
    for k, name in enumerate(result.series_order):
        model = k < 2
        color = (MLM_COLOR, LTR_COLOR)[k] if model else LANDMARK_COLORS[(k - 2) % len(LANDMARK_COLORS)]
        kind = ("masked LM" if k == 0 else "left-to-right") if model else "landmark"
        y = [None if not math.isfinite(v) else round(v, 4) for v in result.loss[name]]
        data.append({"type": "scatter", "mode": "lines+markers", "x": result.buckets, "y": y,
                     "name": plotly_text(f"{name} ({kind})" if model else f"landmark: {name}"),
                     "line": {"color": color, "width": 3 if model else 1.5, "dash": "solid" if model else "dash"},
                     "customdata": result.counts,
                     "hovertemplate": "position %{x}: %{y:.2f} nats (%{customdata} words)<extra></extra>"})
    return {"data": data, "layout": {
        "title": {"text": plotly_text(f"Held-out loss by position: {result.mlm_name} vs {result.ltr_name}")},
        "xaxis": {"title": {"text": "position of the word in its sentence (1 = first word)"}, "type": "category"},
        "yaxis": {"title": {"text": "loss (nats per word, lower is better)"}},
        "height": 420, "margin": {"l": 60, "r": 20, "t": 60, "b": 60},
        "legend": {"orientation": "h", "y": -0.25}}}


def heldout_markdown(result: HeldoutComparison, corpus_note: str = "") -> str:
    """The chart's text twin: one row per position bucket, the overall row last, and what the numbers are."""
    names = result.series_order
    headers = ["position", "words", "masked LM", "left-to-right", *names[2:]]
    rows = [[b, f"{c:,}", *[loss_text(result.loss[n][i]) for n in names]] for i, (b, c) in enumerate(zip(result.buckets, result.counts))]
    rows.append(["all", f"{result.questions:,}", *[loss_text(result.overall[n]) for n in names]])
    intro = (f"**{literal(result.mlm_name)}** (masked LM: the word alone hidden, both sides read) and "
             f"**{literal(result.ltr_name)}** (left-to-right: the words before it only) on the same "
             f"{plural(result.questions, 'held-out word')} in {plural(result.sentences, 'complete sentence')} "
             f"of {plural(result.blocks, 'held-out block')}; loss in nats per word, lower is better. "
             "Landmarks: n-gram guessers counted over the training text (the word-before guesser reads one word "
             "on the left, where a left-to-right model may read them all; the both-neighbours guesser also the word "
             "after, which only the masked LM can read).")
    return "\n\n".join(p for p in (intro, corpus_note, md_table(headers, rows), literal(result.winner_note()),
                                    _bands_note(result)) if p)


def _bands_note(result: HeldoutComparison) -> str:
    """The position bands where the left-to-right model is lower on these words, said with their sizes: a small band
    of a small sample can disagree with the shipped measurement ("every position", on every held-out word)."""
    m = result.loss[result.mlm_name]

    def lower_than_mlm(series: list[float]) -> str:
        """The bands (with their sizes) where ``series`` is below the masked LM: "position 1 (10 words)"; "" if none."""
        bands = [(b, c) for b, c, x, y in zip(result.buckets, result.counts, m, series) if c and y < x]
        return (f"position{'s' if len(bands) > 1 else ''} " + ", ".join(f"{b} ({plural(c, 'word')})" for b, c in bands)
                if bands else "")

    behind = lower_than_mlm(result.loss[result.ltr_name])
    said = (f"On these words the left-to-right model is lower at {behind}; a band of few words moves with the sample "
            "(the twins' card measures all of their held-out words, by position, at every checkpoint)." if behind
            else "On these words the masked LM is lower at every position band.")
    under = lower_than_mlm(result.loss.get(BOTH_NEIGHBOURS, []))
    return said + (f" The both-neighbours guesser is lower than the masked LM at {under}: there a word's two "
                   "neighbours, counted over the training text, say more than the model has learned to read from its "
                   "whole sentence." if under else "")


# --- right-context cloze -----------------------------------------------------------------------------------
def cloze_markdown(result: ClozeRanks, max_rows: int = 100) -> str:
    """Summary per model (mean reciprocal rank, top-1, top-5, median rank), then the rank per sentence."""
    kind = {"mlm": "masked LM", "ltr": "left-to-right"}
    summary = [[f"{n} ({kind[result.objectives[n]]})", *[shown(s[key]) for _label, key, shown, _h in SUMMARY_COLUMNS]]
               for n in result.names for s in [result.summary(n)]]
    head = md_table(["model", *[label for label, _key, _shown, _h in SUMMARY_COLUMNS]], summary)
    rows = [[it.sentence, Code(it.answer), *[f"{result.ranks[n][k]:,} ({result.first_guess[n][k]})" for n in result.names]]
            for k, it in enumerate(result.items[:max_rows])]
    table = md_table(["sentence (the words after the blank decide it)", "answer",
                      *[f"{n}: rank (first guess)" for n in result.names]], rows)
    return (f"Right-context cloze: {plural(len(result.items), 'sentence')} whose words *after* the blank decide the "
            "answer. Rank 1 = the model's first guess; the left-to-right model guesses from the words before the "
            "blank only.\n\n" + head + _who_ranks_better(result) + _where_the_ltr_model_leads(result)
            + "\n\n<details><summary>The rank of the right "
            "word, sentence by sentence</summary>\n\n" + table + "\n\n</details>")


def _who_ranks_better(result: ClozeRanks) -> str:
    """Sentence by sentence, which of two models ranks the right word better (the summary's averages can tie while
    one model is better on most sentences)."""
    if len(result.names) != 2:
        return ""
    a, b = result.names
    better = sum(1 for x, y in zip(result.ranks[a], result.ranks[b]) if x < y)
    worse = sum(1 for x, y in zip(result.ranks[a], result.ranks[b]) if x > y)
    ties = len(result.items) - better - worse
    return (f"\n\nSentence by sentence, **{literal(a)}** ranks the right word better on **{better} of "
            f"{len(result.items)}**, {literal(b)} on {worse}" + (f", {ties} tied" if ties else "") + ".")


def _median_text(v: float) -> str:
    """A median rank as the table shows it: whole, or halfway between two ranks."""
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"


SUMMARY_COLUMNS = (("mean reciprocal rank", "mrr", "{:.3f}".format, True), ("top-1", "top1", "{:.1%}".format, True),
                   ("top-5", "top5", "{:.1%}".format, True), ("median rank", "median_rank", _median_text, False))
FIRST_GUESS_COLUMNS = ("mean reciprocal rank", "top-1", "top-5")  # they weigh a model's first guesses


def _where_the_ltr_model_leads(result: ClozeRanks) -> str:
    """For a masked LM beside a left-to-right model: the summary columns the left-to-right one leads (as the table
    shows them: a lead that rounds away is none), said in words with what they count — the first guesses, where a
    few sentences decide them, or the middle sentence's rank — and the sentences on which the left-to-right model
    has the answer in its top 5 from the words before the blank alone (the set is written so that the words after
    decide it; there the words before, or the answer's being a common word after them, suffice)."""
    by_objective = {result.objectives[n]: n for n in result.names}
    if len(result.names) != 2 or set(by_objective) != {"mlm", "ltr"}:
        return ""
    mlm, ltr = by_objective["mlm"], by_objective["ltr"]
    m, l = result.summary(mlm), result.summary(ltr)
    ahead = [(label, shown(l[key]), shown(m[key])) for label, key, shown, higher in SUMMARY_COLUMNS
             if shown(l[key]) != shown(m[key]) and (l[key] > m[key] if higher else l[key] < m[key])]
    first, five = ({n: sum(r <= k for r in result.ranks[n]) for n in (mlm, ltr)} for k in (1, 5))
    hinted = [it.answer for it, r in zip(result.items, result.ranks[ltr]) if r <= 5]
    said = ""
    if ahead:
        said += (f"\n\n{literal(ltr)} (left-to-right) is ahead on "
                 + ", ".join(f"{label} ({a} against {b})" for label, a, b in ahead) + ".")
        if any(label in FIRST_GUESS_COLUMNS for label, _a, _b in ahead):
            said += (" Top-1, top-5 and the mean reciprocal rank weigh a model's first guesses, which a few sentences "
                     f"decide: the right word comes first on {plural(first[mlm], 'sentence')} for the masked LM and "
                     f"{first[ltr]} for the left-to-right model, in the first five on {five[mlm]} and {five[ltr]}.")
        if any(label == "median rank" for label, _a, _b in ahead):
            said += " The median rank is the middle sentence's: half the sentences rank the right word at it or better."
        said += " The count sentence by sentence above weighs every sentence alike."
    if hinted:
        said += (f"\n\nOn {plural(len(hinted), 'sentence')} the left-to-right model has the right word in its top 5 "
                 f"from the words before the blank alone ({', '.join(html_code(w) for w in hinted)}): a common word "
                 "after those words, or words that point to it; there the words after the blank are not all that "
                 "decides it.")
    return said


# --- the learner's sentence --------------------------------------------------------------------------------
def side_by_side_spec(guesses: list[TwinGuesses]) -> dict:
    """Top-k bars of each model, side by side, each panel titled with the model that answered."""
    n = len(guesses)
    data, layout = [], {"height": 120 + 26 * max(len(g.top) for g in guesses), "showlegend": False,
                        "margin": {"l": 10, "r": 30, "t": 78, "b": 30}, "annotations": []}
    gap = 0.16  # room for the next panel's word labels
    width = (1 - gap * (n - 1)) / n
    # one scale for both panels, so the bars compare across the models (each on its own drew a 1.3 % bar as long as
    # the other model's 2.1 %)
    top = max([p for g in guesses for _t, p in g.top], default=0.0) or 1.0
    for i, g in enumerate(guesses):
        suffix = "" if i == 0 else str(i + 1)
        x0 = i * (width + gap)
        # the longest bar ends at 70 % of its panel, so its percentage stays inside the panel at phone width
        layout[f"xaxis{suffix}"] = {"domain": [x0 + 0.06, x0 + width], "showticklabels": False, "range": [0, top / 0.7]}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "autorange": "reversed", "automargin": True}
        color = LTR_COLOR if g.objective == "ltr" else MLM_COLOR
        data.append({"type": "bar", "orientation": "h", "x": [p for _t, p in g.top],
                     "y": [plotly_text(t) for t, _p in g.top], "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                     "marker": {"color": color}, "text": [percent(p) for _t, p in g.top], "textposition": "outside",
                     "cliponaxis": False, "hovertemplate": "%{y}: %{text}<extra></extra>"})
        # two short lines each: side by side at phone width the panels are ~170 px wide
        kind = "left-to-right:<br>words before only" if g.objective == "ltr" else "masked LM:<br>both sides"
        layout["annotations"].append({"text": f"<b>{plotly_text(g.name)}</b><br>{kind}", "x": x0 + width / 2, "y": 1.0,
                                      "xref": "paper", "yref": "paper", "xanchor": "center", "yanchor": "bottom",
                                      "showarrow": False})
    return {"data": data, "layout": layout}


def side_by_side_markdown(guesses: list[TwinGuesses]) -> str:
    """The bars' text twin: rank, then each model's guess and probability."""
    k = max(len(g.top) for g in guesses)
    rows = [[str(r + 1), *[f"{g.top[r][0]} {percent(g.top[r][1])}" if r < len(g.top) else "" for g in guesses]]
            for r in range(k)]
    notes = "\n".join(f"- **{literal(g.name)}** read {literal(g.read)}" for g in guesses)
    said = [f"rank **{g.expected[1]:,}** for {literal(g.name)} ({percent(g.expected[2])})" if g.expected else
            f"{literal(g.expected_note)} for {literal(g.name)}" for g in guesses if g.expected or g.expected_note]
    word = next((html_code(g.expected[0]) for g in guesses if g.expected), "")
    expected = ("\n\nThe word you expect" + (f", {word}" if word else "") + ": " + "; ".join(said)
                + " (rank 1 = the model's first guess, among the words that can stand at the blank)." if said else "")
    return notes + expected + "\n\n" + md_table(["rank", *[g.name for g in guesses]], rows)


# --- heads -------------------------------------------------------------------------------------------------
def _cell(role: str, share: float) -> str:
    return ROLE_MARKS[role] if role == "mixed" else f"{ROLE_MARKS[role]} {share:.0%}"


def head_roles_spec(roles: HeadRoles) -> dict:
    """Layers × heads, each cell coloured by its label and showing the share that earns it."""
    index = {role: i for i, role in enumerate(ROLE_MARKS)}
    z = [[index[roles.role_of(l, h).role] for h in range(roles.heads)] for l in range(roles.layers)]
    text = [[GRID_MARKS[r.role] + ("" if r.role == "mixed" else f"<br>{100 * r.share:.0f}")
             for r in (roles.role_of(l, h) for h in range(roles.heads))] for l in range(roles.layers)]
    hover = [[_cell(roles.role_of(l, h).role, roles.role_of(l, h).share) for h in range(roles.heads)]
             for l in range(roles.layers)]
    n = len(ROLE_COLORS)
    scale = [x for i, c in enumerate(ROLE_COLORS) for x in ([i / n, c], [(i + 1) / n, c])]
    return {"data": [{"type": "heatmap", "z": z, "zmin": -0.5, "zmax": n - 0.5, "colorscale": scale, "showscale": False,
                      "x": [f"h{h + 1}" for h in range(roles.heads)], "y": [f"L{l + 1}" for l in range(roles.layers)],
                      "text": text, "texttemplate": "%{text}", "textfont": {"size": 11}, "xgap": 2, "ygap": 2,
                      "customdata": hover, "hovertemplate": "layer %{y}, head %{x}: %{customdata}<extra></extra>"}],
            "layout": {"title": {"text": "What each head attends to<br><sub>" + plotly_text(roles.model_name) + "</sub>"},
                       "yaxis": {"autorange": "reversed", "title": {"text": "layer"}},
                       "xaxis": {"title": {"text": "← previous word, → next word, = same word<br>C [CLS], S [SEP], "
                                                   "≈ broad, · none<br>the number: % of the head's attention",
                                           "font": {"size": 12}}},
                       "height": 190 + 46 * roles.layers, "margin": {"l": 50, "r": 10, "t": 70, "b": 100}}}


def head_roles_markdown(roles: HeadRoles) -> str:
    """The grid's text twin: one row per layer, one cell per head (its label and the share that earns it),
    the counts below."""
    rows = [[f"L{layer + 1}", *[_cell(roles.role_of(layer, h).role, roles.role_of(layer, h).share)
                                for h in range(roles.heads)]] for layer in range(roles.layers)]
    table = md_table(["", *[f"h{h + 1}" for h in range(roles.heads)]], rows)
    counts = ", ".join(f"{role}: {n}" for role, n in roles.counts().items() if n)
    causal = (" A left-to-right model cannot look at the next word: its next-word share is 0 by construction."
              if roles.causal else "")
    return (f"**{literal(roles.model_name)}**: each head labelled by where its attention goes, from each of "
            f"{roles.words:,} words of {plural(roles.sentences, 'fixed sentence')} (Clark et al. 2019). A label needs "
            "at least half of the head's attention on that target (the share shown); *broad* = spread out "
            f"(entropy ≥ 75 % of its maximum, shown as that share); · = none of these.{causal}\n\n"
            f"Heads by label: {counts}.\n\n<details><summary>The grid as a table</summary>\n\n{table}\n\n</details>")


PLANTED = ("This run started its heads on the neighbouring words (the default start): its previous- and next-word "
           "heads were planted at initialisation, not grown. A run with the plain random start shows whether "
           "such heads grow on their own.")


def roles_over_steps_markdown(run: RolesOverSteps, planted: bool = False) -> str:
    """How many heads carry each label at each measured checkpoint, and when the first previous-word head appeared;
    ``planted``: the run started its heads on the neighbouring words (said first)."""
    roles = list(run.measured[0].counts())  # every label, in the same order
    rows = [[f"{step:,}", *[str(m.counts()[role]) for role in roles]] for step, m in zip(run.steps, run.measured)]
    first = run.first_step_with("previous word")
    when = (f"The first previous-word head appears by step {first:,}." if first is not None
            else "No head attends mostly to the previous word at any measured checkpoint.")
    nxt = run.first_step_with("next word")
    when += (f" The first next-word head appears by step {nxt:,}." if nxt is not None else "")
    return ((PLANTED + "\n\n" if planted else "") +
            f"**{literal(run.run_name)}**, heads by label at each checkpoint ({plural(len(run.steps), 'checkpoint')} "
            f"measured). {when}\n\n" + md_table(["step", *roles], rows))


# --- cost --------------------------------------------------------------------------------------------------
def cost_markdown(run: TrainingCost, reference: TrainingCost, hardware: str = "") -> str:
    """The run's tokens and FLOPs beside BERT-base's, every line of arithmetic shown."""
    share = run.flops / reference.flops if reference.flops else 0.0
    lines = [f"**{literal(run.label)}**", *[f"- {literal(x)}" for x in run.tokens_lines], f"- {run.flops_line}", "",
             f"**{literal(reference.label)}**" + (f" ({literal(hardware)})" if hardware else ""),
             *[f"- {x}" for x in reference.tokens_lines], f"- {reference.flops_line}", ""]
    if share > 0:
        tokens_share = run.tokens / reference.tokens
        lines.append(f"The run read one token for every {1 / tokens_share:,.0f} that BERT-base read "
                     f"({tokens_share:.2%} as many) and spent {share:.2%} of its compute: BERT-base took about "
                     f"{1 / share:,.0f} times as much.")
    else:
        lines.append("The run has not read any tokens yet.")
    lines.append("\n*Training FLOPs ≈ 6 × parameters × tokens (a forward 2 per parameter per token, its backward 4); "
                 "attention's length-squared term is left out on both sides.*")
    return "\n".join(lines)
