"""The Pretrain tab's "Table 5 in miniature" section: the shipped twins fine-tuned on a sentence-level and a
token-level task, measured by ``bench/bench_table5.py`` (shown with its date and machine) beside the paper's rows,
and one cell re-run live as a fine-tuning run in the machine's training slot, followed by the tab's poll.

Wiring only: the table from :mod:`bertdemo.finetune.table5`, the live cell through
:func:`bertdemo.finetune.table5_run.start_cell` (the run rules every fine-tuning start obeys), the drawing in
:mod:`bertdemo.viz.table5`. Torch-free.
"""

from __future__ import annotations

import secrets
from typing import Any

import gradio as gr

from bertdemo.finetune import table5
from bertdemo.finetune.table5_run import start_cell
from bertdemo.models import twin_curve, twins
from bertdemo.runs.status import ACTIVE_STATUSES
from bertdemo.ui import api_answers, run_starts
from bertdemo.ui.common import user_errors as wrap_errors, visitor_of
from bertdemo.ui.tab_poll import TabPoll
from bertdemo.viz import table5 as viz

INTRO = (
    "BERT's paper tested its claim with one experiment (§5.1, Table 5): the same data, fine-tuning "
    "recipe and hyperparameters, only the pretraining objective changed — a masked LM against a left-to-right LM "
    "that keeps its left-only view at fine-tuning. The one-sentence task (SST-2) barely moved (−0.5 points) and "
    "MNLI little (−1.8), but the paraphrase task MRPC fell 9.0 points and the span task (SQuAD) most (−10.1). Here the shipped twins are fine-tuned the same way on a sentence-level task (a summary's topic) "
    "and a token-level one (Find the names), three seeds each. The left-to-right twin keeps its causal mask: its "
    "sentence head reads the last piece (its [CLS] sees only itself), and each word's label comes from the word's "
    "first piece, which has seen only the words before it. The twins are small ({shape}, {tokens} tokens "
    "of pretraining each): read the measured rows as what this miniature shows, not as the paper's numbers.")


def build(ctx: Any, poll: TabPoll) -> None:
    """Lay out the section inside the current Blocks context and wire its events; ``poll``: the tab's
    :class:`~bertdemo.ui.tab_poll.TabPoll`, which follows a cell this page started."""
    service = ctx.finetune_runs
    shipped = table5.read_shipped()
    errors = wrap_errors(public=ctx.settings.is_public)
    with gr.Accordion("Table 5 in miniature: fine-tune both twins", open=False, elem_id="pt-table5"):
        curve = twin_curve.read_curve()
        gr.Markdown(INTRO.format(shape=twins.shape_text(),
                                 tokens=twin_curve.millions(curve.final_tokens) if curve is not None else "millions of"))
        gr.Markdown(viz.table_markdown(shipped), elem_id="pt-table5-table")
        along = viz.along_markdown(shipped)
        gr.Markdown(along, elem_id="pt-table5-along", visible=bool(along))
        gr.Markdown("**Re-run one cell live** (the settings above; it takes the training slot like any run):")
        with gr.Row():
            twin = gr.Dropdown([("masked LM", "mlm"), ("left-to-right, every next word", "ltr"),
                                ("left-to-right, the masked twin's words", "ltr-masked")], value="ltr", label="Twin",
                               elem_id="pt-table5-twin", scale=1)
            task = gr.Dropdown([("topic (sentence)", "topic"), ("find the names (token)", "names")], value="topic",
                               label="Task", elem_id="pt-table5-task", scale=1)
            seed = gr.Number(0, minimum=0, maximum=table5.MAX_SEED, step=1, precision=0, label="Seed of the fine-tune",
                             elem_id="pt-table5-seed", scale=1)
        with gr.Row():
            go = gr.Button("Re-run this cell", variant="primary", elem_id="pt-table5-run", scale=2)
            stop = gr.Button("Stop this cell", elem_id="pt-table5-stop", scale=1)
        cell = gr.Markdown(elem_id="pt-table5-cell")
        token = gr.State("")

    def queue_cell(twin_kind: Any, task_name: Any, seed_value: Any, owner: str, visitor: str) -> Any:
        """The cell checked at once, then started, or queued while the slot is busy (the run or its place)."""
        twin_kind, task_name, seed_value = table5.check_cell(twin_kind, task_name, seed_value)
        return ctx.runs.start_or_queue(owner, visitor, "Table 5 cell (a fine-tuning run)",
                                       lambda: start_cell(service, twin_kind, task_name, seed_value, owner,
                                                          visitor=visitor))

    def cell_now() -> tuple[str, bool]:
        status = service.status()
        return viz.cell_markdown(status, shipped), bool(status and status["status"] in ACTIVE_STATUSES)

    @errors
    def table5_cell_from_page(request: gr.Request, twin_kind: str, task_name: str, seed_value: float, owner: str):
        owner = owner or secrets.token_urlsafe(24)
        outcome = queue_cell(twin_kind, task_name, seed_value, owner, visitor_of(request))
        return run_starts.answer(outcome, lambda: cell_now()[0] or "Starting…"), owner

    @errors
    def table5_stop_from_page(owner: str) -> str:
        status = service.status()
        if not status or not str(status.get("settings", {}).get("init", "")).startswith("twin:"):
            raise ValueError("No cell of Table 5 is running.")
        ctx.runs.control("stop", owner)
        return cell_now()[0]

    @errors
    def start_table5_cell(twin: str, task: str, seed: float, owner_token: str = "", request: gr.Request = None) -> str:
        """Re-run one cell of Table 5 in miniature as a fine-tuning run: `twin` "mlm" or "ltr", `task` "topic" or
        "names", `seed` 0–99, with the shipped table's settings. On a public server pass an `owner_token`. Follow it
        with /run_status: its test score is `test_accuracy` (topic) or `test_macro_f1` (names: word-level F1)."""
        if ctx.settings.is_public and not owner_token:
            raise ValueError("This is a public server: pass an owner_token (any secret string) to start a run.")
        outcome = queue_cell(twin, task, seed, owner_token, visitor_of(request))
        return run_starts.answer(outcome, lambda: cell_now()[0], api=True)

    def cell_part(request: gr.Request, owner: str):
        """The cell this page started (nothing before one): live while it trains."""
        if not owner:
            return (gr.skip(),), False
        place = ctx.runs.queued(owner, visitor_of(request))  # this browser's cell, while it waits its turn
        if place is not None and not place.run_id:  # waiting (live), or refused at its turn (no longer)
            return (place.sentence(),), not place.error
        text, active = cell_now()
        return (text,), active

    go_click = go.click(table5_cell_from_page, [twin, task, seed, token], [cell, token],
                        api_name="table5_cell_from_page", api_visibility="private", show_progress_on=[cell])
    stop_click = stop.click(table5_stop_from_page, token, cell, api_name="table5_stop_from_page",
                            api_visibility="private")
    poll.add(cell_part, [token], [cell])  # the tab's one timer follows the cell (ui/tab_poll.py)
    for event in (go_click, stop_click):  # each answers in the cell; the poll's draw after it sends the cell again
        poll.after(event, writes=[cell])
    gr.api(api_answers.plain(start_table5_cell), api_name="start_table5_cell")
