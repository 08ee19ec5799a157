"""Table 5 in miniature drawn as Markdown: the paper's rows, the shipped twins' measured rows beside them (mean ± sd
over seeds, each seed, whether each gap is within seed noise, where and when it was measured), and a live cell's
progress and score set beside the bench's seeds for that cell. Torch-free (:mod:`bertdemo.finetune.table5`)."""

from __future__ import annotations

import math
from typing import Any

from bertdemo.finetune.table5 import METRICS, PAPER_ROWS, TASK_LABELS, TWIN_LABELS, paper_agreement
from bertdemo.models.twin_curve import millions
from bertdemo.models.twins import PAIRS

SHORT_TASK = {"topic": "Topic (sentence)", "names": "Find the names (token)"}
ROW_TASK = {"topic": "Topic · sentence", "names": "Names · token"}  # the table's rows: short, it fits a phone


def _pct(value: float) -> str:
    return f"{value * 100:.1f}"


def table_markdown(shipped: dict[str, Any] | None) -> str:
    """The paper's rows and each pair's measured rows in one table, then the sentences, where the miniature agrees
    with the paper, and the measurement's record."""
    paper = "\n".join(f"| {name} · {level} | {mlm:.1f} | {ltr:.1f} | {ltr - mlm:+.1f} |"
                      for name, level, mlm, ltr in PAPER_ROWS)
    head = ("MLM: the masked LM (BERT), LTR: the left-to-right LM; **paper**: Devlin et al.'s Table 5, BERT-base "
            "without next-sentence prediction (MLM: its *No NSP* row; LTR: *LTR & No NSP*), dev sets (sentence, sentence "
            "pair, span of tokens); **here**: the shipped twins, test splits, mean ± sd over seeds — the "
            "*paper* pair (the LTR twin predicts every next word) and the *controlled* pair (it predicts the masked "
            "twin's words).\n\n| task | MLM | LTR | LTR − MLM |\n|---|---|---|---|\n"
            f"| **paper** | | | |\n{paper}\n")
    if shipped is None:
        return (head + "\n**No measured table ships with this install**: run `python -m "
                "bertdemo.tools.measure_twin_pairs --table5 --export`, or re-run a cell below.")
    cells, seeds = shipped["cells"], shipped["seeds"]
    rows, sentences, agreement = [], [], []
    for pair, verdicts in shipped["comparisons"].items():
        mlm, ltr = PAIRS[pair]
        rows.append(f"| **here, {pair} pair** ({len(seeds)} seeds) | | | |")
        rows += [f"| {ROW_TASK[task]} | {_pct(c[mlm]['mean'])} ± {_pct(c[mlm]['sd'])} | "
                 f"{_pct(c[ltr]['mean'])} ± {_pct(c[ltr]['sd'])} | "
                 f"{-verdicts[task]['mean_diff'] * 100:+.1f} ± {_pct(verdicts[task]['sd_diff'])} |"
                 for task, c in cells.items()]
        sentences += [f"- {verdicts[task]['sentence']}" for task in cells]
        agreement.append(paper_agreement(shipped, pair))
    twins = [t for t in TWIN_LABELS if all(t in c for c in cells.values())]
    each = "\n".join(f"- {SHORT_TASK[task]}, {TWIN_LABELS[twin]}: {' · '.join(_pct(x) for x in c[twin]['scores'])}"
                     for task, c in cells.items() for twin in twins)
    s = shipped["settings"]
    return ("\n".join([head.rstrip("\n"), *rows]) + "\n\n" + "\n".join(sentences) + "\n\n**Against the paper.** "
            + " ".join(agreement) + f"\n\nEach seed ({', '.join(map(str, seeds))}), test scores in %:\n{each}\n\n"
            f"Measured {shipped['date'][:10]} on {shipped['machine']} by `{shipped['command']}` "
            f"({shipped['wall_s'] / 60:.0f} minutes in all). Every cell: {s['steps']} steps of {s['batch_size']} "
            f"examples, learning rate {s['learning_rate']:g} (warm-up, then linear decay), the validation split "
            f"scored every {s['eval_every']} steps and at the end, the best weights scored once on test. Topic: "
            "accuracy over 11 topics; names: word-level F1 of NAME. A seed fixes the new head, the data order and "
            "dropout, the same for every twin, so each gap is read seed by seed.")


ALONG_COLUMNS = {"mlm": "MLM", "ltr-masked": "LTR same", "ltr": "LTR every"}  # short: the tables fit a phone
PAIR_TWIN = {"controlled": "the same-words", "paper": "the every-word"}


def _ahead(along: list[dict[str, Any]], task: str, pair: str) -> str:
    """Where the masked LM leads ``pair``'s left-to-right twin on ``task`` along training, in words, and the gap
    (masked LM minus the twin) at each checkpoint."""
    gaps = [a["comparisons"][pair][task] for a in along]
    ahead = [g["mean_diff"] > 0 for g in gaps]
    clear = sum(g["mean_diff"] > 0 and not g["within_noise"] for g in gaps)
    behind = sum(g["mean_diff"] < 0 and not g["within_noise"] for g in gaps)
    since = len(ahead)
    while since > 0 and ahead[since - 1]:
        since -= 1
    text = (f"the masked LM ahead of {PAIR_TWIN[pair]} twin at {sum(ahead)} of {len(gaps)} checkpoints "
            f"({clear} beyond the seed spread, behind it beyond the spread at {behind})")
    if 0 < since < len(ahead) - 1:
        text += f", at each from {millions(along[since]['tokens'])} tokens on"
    return text + ", the gap in points " + " → ".join(f"{100 * g['mean_diff']:+.1f}" for g in gaps)


def along_markdown(shipped: dict[str, Any] | None) -> str:
    """Table 5 at earlier checkpoints of the same runs (``table5.json``'s ``along``, when measured at two or more):
    one small table per task, then where the masked LM leads each pair's left-to-right twin, in words."""
    along = (shipped or {}).get("along") or []
    if len(along) < 2:
        return ""
    seeds = len(along[-1]["seeds"])
    parts = [f"**Along training.** The same cells at earlier checkpoints of the same runs (each checkpoint's models "
             f"fine-tuned the same way, {seeds} seeds; test scores in %, mean ± sd), from the curve above's first "
             "points to the shipped twins (tokens: what each twin had read; LTR same: the left-to-right twin that "
             "predicts the masked twin's words; LTR every: the one that predicts every next word):"]
    for task in ("names", "topic"):
        kinds = [k for k in ALONG_COLUMNS if all(k in a["cells"][task] for a in along)]
        rows = []
        for a in along:
            cells = a["cells"][task]
            best = max(cells[k]["mean"] for k in kinds)
            rows.append(f"| {millions(a['tokens'])} | " + " | ".join(
                (f"**{_pct(cells[k]['mean'])}** ± {_pct(cells[k]['sd'])}" if cells[k]["mean"] == best
                 else f"{_pct(cells[k]['mean'])} ± {_pct(cells[k]['sd'])}") for k in kinds) + " |")
        parts.append(f"{SHORT_TASK[task]}, {METRICS[task].removeprefix('test ')}:\n\n| tokens | "
                     + " | ".join(ALONG_COLUMNS[k] for k in kinds) + " |\n|---|" + "---|" * len(kinds) + "\n"
                     + "\n".join(rows))
        parts.append(f"{SHORT_TASK[task]}: " + "; ".join(_ahead(along, task, pair) for pair in PAIRS
                                                        if pair in along[-1]["comparisons"]) + ".")
    return "\n\n".join(parts)


def cell_markdown(status: dict[str, Any] | None, shipped: dict[str, Any] | None) -> str:
    """A live cell's progress, then its test score beside the bench's seeds for the same cell ("" before any)."""
    if not status or not str(status.get("settings", {}).get("init", "")).startswith("twin:"):
        return ""
    twin = status["settings"]["init"].split(":", 1)[1]
    task, seed = status["task"], status["settings"].get("seed", 0)
    who = f"**Live cell**: the {TWIN_LABELS.get(twin, twin)} twin on {TASK_LABELS.get(task, task)}, seed {seed}"
    curve = status.get("val_accuracy") or []
    line = f"{who} — {status['status']}, step {status['step']:,} of {status['total_steps']:,}."
    if curve:
        line += f" Validation {METRICS[task].replace('test ', '')} at the last evaluation: {curve[-1]:.1%}."
    score = status.get("test_accuracy") if task == "topic" else status.get("test_macro_f1")
    if score is None or (isinstance(score, float) and math.isnan(score)):
        return f"{line}\n\n{status.get('message', '')}".strip()
    line = f"{line}\n\n{status.get('message', '')}"
    if shipped and task in shipped["cells"] and twin in shipped["cells"][task]:
        cell = shipped["cells"][task][twin]
        seeds = " · ".join(_pct(s) for s in cell["scores"])
        line += (f"\n\nThe bench's seeds for this cell: {seeds} (mean {_pct(cell['mean'])} ± {_pct(cell['sd'])}); "
                 f"this run: {_pct(score)}.")
        if int(seed) in shipped["seeds"]:
            bench = cell["scores"][shipped["seeds"].index(int(seed))]
            same = "the same" if abs(bench - score) < 5e-4 else f"{(score - bench) * 100:+.1f} points from it"
            line += (f" The bench measured seed {seed} at {_pct(bench)}: {same} (the same seed and settings; a "
                     "difference is the machine's arithmetic, e.g. another number of threads).")
    return line
