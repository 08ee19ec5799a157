"""The Attention tab: one head as a large heatmap, every layer x head as a clickable overview,
attention rollout, one token across layers, CSV export and head ablation."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo import compat
from bertdemo.lazy import LazyModule
from bertdemo.models.causal import is_left_to_right
from bertdemo.snippets import views as snippets
from bertdemo.ui import common, first_show, lanes
from bertdemo.ui.code_panel import code_panel
from bertdemo.ui.common import progress_callback
from bertdemo.ui.plotly_figure import PlotlyFigure

if TYPE_CHECKING:
    from bertdemo.context import AppContext

ablation = LazyModule("bertdemo.explore.ablation")
attention = LazyModule("bertdemo.explore.attention")
heatmaps = LazyModule("bertdemo.viz.heatmaps")

EXAMPLE = "The animal didn't cross the street because it was too tired."
ABLATION_EXAMPLE = "The animal didn't cross the street because it was too [MASK]."
ABLATION_HEADERS = ["mask", "rank", "all heads", "p", "heads off", "p "]
DIRECTION_CHOICES = [("all", "all"), ("A → B", "A->B"), ("B → A", "B->A")]
ROLLOUT_NOTE = (
    "**Attention rollout** (Abnar & Zuidema, 2020) follows attention through the layers: each layer's "
    "mean over heads is averaged with the identity (the residual connection), rows are rescaled to sum "
    "to 1, and the layers are multiplied. Row *i* estimates how much of token *i*'s representation after "
    "the layer chosen above comes from each input token — a rough picture of information flow, not an explanation."
)
EXPORT_NOTE = (
    "Every figure saves as PNG with the camera button of its toolbar (top right, on hover or tap); "
    "the overview image has its own download button. The button below writes the numbers of the heatmap, "
    "the rollout and the token view as CSV."
)
OVERVIEW_FOLDER = "bertdemo-attention-overview"
LAZY_SCREENS = 0.5  # the rollout and token figures are drawn within half a screen's height of the viewport
LOSS_NOTE = (
    "**Masked-LM loss** = mean over the [MASK]s of −log p(word), where the word at each mask is the one "
    "you give (comma-separated, in order), or — when you give none — the intact model's top choice. "
    "A head that helped raises the loss when it is switched off."
)


def _clamp(result: attention.AttentionResult, layer, head) -> tuple[int, int]:
    return min(int(layer), result.num_layers - 1), min(int(head), result.num_heads - 1)


def _render(result: attention.AttentionResult, layer, head, mean: bool, hide: bool, renorm: bool, direction: str):
    """(heatmap, overview, info) for the current controls."""
    layer, head = _clamp(result, layer, head)
    view = attention.select_view(result, layer, None if mean else head, hide, renorm, direction or "all")
    overview = heatmaps.attention_overview(
        attention.all_heads(result, hide, renorm), selected=None if mean else (layer, head)
    )
    return heatmaps.attention_heatmap(view), overview, heatmaps.attention_info(result, view, hide)


def _token_choices(result: attention.AttentionResult) -> list[tuple[str, int]]:
    return [(result.label(i), i) for i in range(len(result.tokens))]


def _default_token(result: attention.AttentionResult, current) -> int:
    if current is not None and 0 <= int(current) < len(result.tokens):
        return int(current)
    return next((i for i, s in enumerate(result.special) if not s), 0)


def _session_dir(current: str | None) -> str:
    """One temporary folder per browser session for the CSVs (removed when the session ends)."""
    if current and Path(current).is_dir():
        return current
    return tempfile.mkdtemp(prefix="bertdemo-attention-")


def _remove_dir(path: str | None) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


def _overview_file(image, previous: str | None) -> str:
    """Save the overview as this page's one PNG, in Gradio's cache (served from there, never copied), and
    remove the page's previous one: calls never pile PNGs up in the temp folder."""
    folder = Path(compat.upload_folder()) / OVERVIEW_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="overview-", suffix=".png", dir=folder)
    with os.fdopen(fd, "wb") as fh:
        image.save(fh, format="PNG", compress_level=1)  # half the time of the default level, about the same size
    _remove_overview(previous)
    return name


def _remove_overview(path: str | None) -> None:
    if path and Path(path).parent.name == OVERVIEW_FOLDER:
        Path(path).unlink(missing_ok=True)


def _write_csvs(folder: str, views: dict[str, attention.AttentionView]) -> list[str]:
    paths = []
    for name, view in views.items():
        path = Path(folder) / f"{name}.csv"
        path.write_text(attention.view_csv(view), encoding="utf-8")
        paths.append(str(path))
    return paths


def build(ctx: AppContext, model_box: gr.Dropdown) -> None:
    """Lay out the tab inside the current Blocks context and wire its events (the slider ranges are fitted to the
    model when the tab is first shown, and when the model changes while it is on screen: ui/first_show.py)."""
    user_errors = functools.partial(common.user_errors, public=ctx.settings.is_public)  # no server path shown
    store = ctx.models

    @user_errors
    def run_attention(text, text_pair, model, layer, head, mean, hide, renorm, direction="all", previous=None,
                      progress=gr.Progress()):
        loaded = store.get(model, progress=progress_callback(progress))
        result = attention.compute(loaded, text, text_pair)
        heatmap, overview, info = _render(result, layer, head, mean, hide, renorm, direction)
        path = _overview_file(overview, previous)
        return heatmap, path, info, result, path

    @user_errors
    def attention_weights(text: str, text_pair: str = "", model: str = "", layer: int = 0, head: int = 0,
                          mean: bool = False, hide: bool = False, renorm: bool = True, direction: str = "all") -> dict:
        """One layer and head's attention weights as numbers (the MCP tool ``attention``): each row is one token's
        weights over the tokens it attends to, summing to 1.

        Args:
            text: Sentence A, at most 128 tokens with sentence B.
            text_pair: Sentence B (optional): the pair is encoded as [CLS] A [SEP] B [SEP].
            model: A hub id, an embedded model or a run's checkpoint; empty: the server's default model.
            layer: The layer, from 0 (the first) to the model's number of layers - 1.
            head: The head within the layer, from 0 to the model's number of heads - 1 (ignored when mean is true).
            mean: True for the mean over the layer's heads instead of one head.
            hide: True to leave out [CLS] and [SEP] (rows and columns).
            renorm: With hide: rescale each row to sum to 1 over the tokens that remain.
            direction: Which rows and columns: "all", "A->B" (sentence A's tokens attending to B's) or "B->A".
        """
        result = attention.compute(store.get(model), text, text_pair)
        view = attention.select_view(result, int(layer), None if mean else int(head), hide, renorm, direction)
        return {**attention.as_plain(result, view), "about": heatmaps.attention_info(result, view, hide)}

    @user_errors
    def run_rollout(text, text_pair, model, layer=-1, hide=False, renorm=True, direction="all", progress=gr.Progress()):
        """Rollout through ``layer`` (-1, or beyond the last layer: through the last layer)."""
        loaded = store.get(model, progress=progress_callback(progress))
        result = attention.compute(loaded, text, text_pair)
        last = result.num_layers - 1
        layer = last if not 0 <= int(layer) <= last else int(layer)
        view = attention.rollout_view(result, layer, hide, renorm, direction or "all")
        return heatmaps.attention_heatmap(view), attention.view_csv(view)

    @user_errors
    def run_ablation(text, text_pair, model, heads, top_k=5, answers="", progress=gr.Progress()):
        loaded = store.get(model, progress=progress_callback(progress))
        result = ablation.ablate(loaded, text, text_pair, heads, int(top_k), answers)
        whose = "your words" if result.targets_given else "the intact model's top choices"
        summary = (
            f"Switched off {len(result.heads)} head(s): "
            + ", ".join(f"{layer}:{head}" for layer, head in result.heads)
            + f".  \n{'Next-word loss (from the words before each blank)' if is_left_to_right(loaded.model) else 'Masked-LM loss'}"
            f" of {whose} ({', '.join(result.targets)}): "
            f"**{result.loss_before:.3f} → {result.loss_after:.3f}** ({round(result.loss_change, 3) + 0.0:+.3f} nats)."
        )
        return summary, result.table()

    def shape_sliders(model: str, layer: float, head: float):
        """The Layer and Head ranges of the model in the picker, before any answer (the tab shown with it)."""
        try:
            layers, heads, _ = store.get(model).shape
            last_layer, last_head = int(layers) - 1, int(heads) - 1
        except (ValueError, TypeError):  # a model that cannot load (the status line says why) or an odd config
            return gr.skip(), gr.skip()
        return (gr.update(maximum=last_layer, value=min(int(layer or 0), last_layer)),
                gr.update(maximum=last_head, value=min(int(head or 0), last_head)))

    def draw(result, layer, head, mean, hide, renorm, direction, token, previous, drawn) -> dict:
        """What the page shows for these controls, as {component: value}: only what changed since ``drawn``
        (the keys of what is on the page, and the overview's pixels) is drawn and sent again."""
        layer, head = _clamp(result, layer, head)
        direction = direction or "all"
        token = _default_token(result, token)
        shown_head = None if mean else head
        keys = {"heatmap": (layer, shown_head, hide, renorm, direction), "rollout": (layer, hide, renorm, direction),
                "token": (token, hide, renorm)}
        before = drawn or {}
        out: dict = {}
        if keys["heatmap"] != before.get("heatmap"):
            view = attention.select_view(result, layer, shown_head, hide, renorm, direction)
            out[heatmap] = heatmaps.attention_heatmap(view)
            out[info] = heatmaps.attention_info(result, view, hide)
            pixels_key = (hide, renorm)
            if before.get("pixels_key") != pixels_key:
                before = {**before, "pixels_key": pixels_key,
                          "pixels": heatmaps.overview_pixels(attention.all_heads(result, hide, renorm))}
            path = _overview_file(heatmaps.with_selection(before["pixels"], None if mean else (layer, head)), previous)
            out[overview] = out[overview_file] = path
        try:
            if keys["rollout"] != before.get("rollout"):
                out[rollout_plot] = heatmaps.attention_heatmap(attention.rollout_view(result, layer, hide, renorm,
                                                                                      direction))
            if keys["token"] != before.get("token"):
                out[token_plot] = heatmaps.attention_heatmap(attention.token_across_layers(result, token, hide, renorm))
        except ValueError:  # the main view reports it
            pass
        if before.get("csv") and len(out) > 0:  # CSVs of views no longer shown: cleared, not left stale
            out[csv_files] = None
        out[drawn_state] = {**before, **keys, "csv": bool(before.get("csv")) and not out}
        return out

    @user_errors
    def make_csvs(result, layer, head, mean, hide, renorm, direction, token, folder, drawn):
        """The numbers of the three views shown, as CSV files (written when asked, not on every move)."""
        if result is None:
            raise ValueError("Show attention first: the CSVs hold the numbers of the views shown.")
        layer, head = _clamp(result, layer, head)
        direction, token = direction or "all", _default_token(result, token)
        views = {
            "attention": attention.select_view(result, layer, None if mean else head, hide, renorm, direction),
            "rollout": attention.rollout_view(result, layer, hide, renorm, direction),
            "token_across_layers": attention.token_across_layers(result, token, hide, renorm),
        }
        folder = _session_dir(folder)
        return _write_csvs(folder, views), folder, {**(drawn or {}), "csv": True}

    @user_errors
    def show(text, text_pair, model, layer, head, mean, hide, renorm, direction, token, previous, drawn=None,
             progress=gr.Progress()):
        """The page's answer to a new sentence: every view, the slider ranges and the token picker, one event
        (the sliders and the CSV box only when they change: each component sent costs the page a pass)."""
        loaded = store.get(model, progress=progress_callback(progress))
        result = attention.compute(loaded, text, text_pair)
        first_token = _default_token(result, None if token is None or token >= len(result.tokens) else token)
        before = drawn or {}
        out = draw(result, layer, head, mean, hide, renorm, direction, first_token, previous, None)
        if before.get("csv", True):
            out[csv_files] = None  # the numbers of another sentence
        shape = (result.num_layers, result.num_heads)
        out[drawn_state] = {**out[drawn_state], "mean": bool(mean), "shape": shape}
        clamped_layer, clamped_head = _clamp(result, layer, head)
        if before.get("shape") != shape or (int(layer), int(head)) != (clamped_layer, clamped_head) \
                or before.get("mean") != bool(mean):
            out[layer_box] = gr.update(maximum=result.num_layers - 1, value=clamped_layer)
            out[head_box] = gr.update(maximum=result.num_heads - 1, value=clamped_head, interactive=not mean)
        out.update({state: result, token_box: gr.update(choices=_token_choices(result), value=first_token)})
        return out

    @user_errors
    def redraw(result, layer, head, mean, hide, renorm, direction, token, previous, drawn):
        """A control moved: redraw what depends on it (the forward is the one held in ``result``); "mean
        over heads" also switches the head slider off (and on again), in the same event."""
        # nothing shown yet (e.g. the slider ranges fitted when the page opened): only the head slider's state
        out = {drawn_state: drawn} if result is None else draw(result, layer, head, mean, hide, renorm, direction,
                                                                token, previous, drawn)
        if (drawn or {}).get("mean", False) != bool(mean):
            out[head_box] = gr.update(interactive=not mean)
        out[drawn_state] = {**(out[drawn_state] or {}), "mean": bool(mean)}
        return out

    def pick(result, evt: gr.SelectData):
        """A click on the overview selects that layer and head."""
        if result is None or evt.index is None:
            return gr.skip(), gr.skip(), gr.skip()
        x, y = evt.index[0], evt.index[1]
        cell = heatmaps.OverviewGeometry(result.num_layers, result.num_heads).cell_at(int(x), int(y))
        if cell is None:
            return gr.skip(), gr.skip(), gr.skip()
        return cell[0], cell[1], False

    def add_heads(spec, layer, head, whole_layer: bool):
        item = f"{int(layer)}:*" if whole_layer else f"{int(layer)}:{int(head)}"
        items = [s.strip() for s in (spec or "").split(",") if s.strip()]
        return ", ".join(items + ([item] if item not in items else []))

    with gr.Tab("Attention", id="attention") as tab:
        gr.Markdown(
            "Self-attention decides, for every token, how much of every other token it mixes in. "
            "Each layer has several heads, each with its own pattern."
        )
        with gr.Row():
            text = gr.Textbox(label="Sentence A", value=EXAMPLE, lines=2, elem_id="att-text")
            text_pair = gr.Textbox(label="Sentence B (optional)", lines=2, elem_id="att-pair")
        with gr.Row():
            layer = gr.Slider(0, 23, value=0, step=1, label="Layer", min_width=200)  # ranges fitted to each model
            head = gr.Slider(0, 15, value=0, step=1, label="Head", min_width=200, elem_id="att-head")
            with gr.Column(min_width=200):
                mean = gr.Checkbox(label="Mean over heads", value=False, elem_id="att-mean")
                hide = gr.Checkbox(label="Hide [CLS]/[SEP]", value=False, elem_id="att-hide")
                renorm = gr.Checkbox(
                    label="Renormalise rows when hiding", value=True,
                    info="Rescale each row to sum to 1 over the tokens that remain.",
                )
            direction = gr.Radio(
                DIRECTION_CHOICES, value="all", label="Sentences", min_width=200, elem_id="att-direction",
                info="A → B: how sentence A's tokens attend to sentence B's (needs a sentence B).",
            )
        button = gr.Button("Show attention", variant="primary", elem_id="att-run")
        info = gr.Markdown(elem_id="att-info")
        heatmap = PlotlyFigure(label="Attention heatmap", elem_id="att-heatmap")
        code = code_panel(ctx, snippets.attention_code, [model_box, text, text_pair, layer, head],
                                  elem_id="att-code")
        gr.Markdown("**Every layer (rows) × head (columns)** — click or tap a head to enlarge it above.")
        overview = gr.Image(
            show_label=False, type="filepath", interactive=False, elem_id="att-overview",
            buttons=["download", "fullscreen"],
        )
        gr.Markdown(ROLLOUT_NOTE)
        with gr.Row():
            # below the first screen: drawn as the learner scrolls towards them, not on every click
            rollout_plot = PlotlyFigure(label="Attention rollout", elem_id="att-rollout", min_width=320,
                                        lazy=LAZY_SCREENS)
            with gr.Column(min_width=320):
                token = gr.Dropdown(label="A token across layers", choices=[], value=None,
                                    info="Where it looks in every layer (mean over heads).", elem_id="att-token")
                token_plot = PlotlyFigure(label="One token, every layer", elem_id="att-token-plot",
                                          lazy=LAZY_SCREENS)
        gr.Markdown(EXPORT_NOTE)
        csv_button = gr.Button("Numbers as CSV", size="sm", elem_id="att-csv-run")
        csv_files = gr.File(label="CSV: attention shown · rollout · token across layers", file_count="multiple",
                            interactive=False, elem_id="att-csv")

        gr.Markdown("## Switch heads off\nSee what the model predicts at the [MASK]s without some heads. "
                    + LOSS_NOTE)
        with gr.Row():
            abl_text = gr.Textbox(label="Sentence with [MASK]", value=ABLATION_EXAMPLE, lines=2, elem_id="abl-text")
            abl_pair = gr.Textbox(label="Its sentence B (optional)", lines=2)  # a name of its own: the tab has two
        with gr.Row():
            abl_heads = gr.Textbox(label="Heads to switch off", value="0:0", elem_id="abl-heads", min_width=220,
                                   info="layer:head, comma-separated, e.g. 2:0, 3:5; layer:* for a whole layer")
            abl_answers = gr.Textbox(label="Right words (optional)", placeholder="e.g. tired", min_width=180,
                                     info="One per [MASK], comma-separated.")
            abl_k = gr.Slider(1, 20, value=5, step=1, label="Top-k", min_width=160)
        with gr.Row():
            add_head = gr.Button("+ the head shown above", size="sm")
            add_layer = gr.Button("+ its whole layer", size="sm")
            abl_button = gr.Button("Compare with and without", variant="primary", elem_id="abl-run")
        abl_summary = gr.Markdown(elem_id="abl-summary")
        abl_table = gr.Dataframe(headers=ABLATION_HEADERS, interactive=False, elem_id="abl-table")

        rollout_csv = gr.Textbox(visible=False)
        rollout_layer = gr.Number(-1, precision=0, visible=False)  # API only: -1 = through the last layer
        rollout_button = gr.Button(visible=False)
        api_button = gr.Button(visible=False)  # /attention: plain figures for API callers
        # /attention_weights: the numbers of one view, no State (the MCP tool: bertdemo/ui/mcp_tools.py)
        gr.api(attention_weights, api_name="attention_weights", **lanes.VIEWS)
        state = gr.State(None)
        drawn_state = gr.State(None)  # what the page shows: the keys of each view, the overview's pixels
        folder_state = gr.State(None, delete_callback=_remove_dir)
        overview_file = gr.State(None, delete_callback=_remove_overview)  # this page's one overview PNG
        shown_with = first_show.model_shown(tab, "attention", model_box)  # the model the tab shows

    layer_box, head_box, token_box = layer, head, token  # the names draw() and show() update
    controls = [layer, head, mean, hide, renorm, direction]
    page_outputs = [heatmap, overview, info, overview_file, rollout_plot, token_plot, csv_files, drawn_state]
    # The API endpoint returns plain figures (its session's sliders keep their ranges); the page's own
    # events answer with every view at once and, on a control change, only with what changed.
    api_button.click(run_attention, [text, text_pair, model_box, *controls, overview_file],
                     [heatmap, overview, info, state, overview_file], api_name="attention", **lanes.VIEWS)
    # One round trip (an open code panel is refreshed in the same answer); the progress shows on the text above the
    # heatmap (text only, as every event of the page): every component an event has shown progress on is refreshed at each status
    # message of every later event, so the sliders, the token list and the views below are left out.
    shown = gr.on([button.click, text.submit],
                  *code.fold(show, [text, text_pair, model_box, *controls, token, overview_file, drawn_state],
                             [*page_outputs, state, layer, head, token]), api_visibility="private",
                  show_progress_on=[info], **lanes.VIEWS)
    common.clear_on_refusal(shown, [heatmap, overview, info, rollout_plot, token_plot, csv_files, state, drawn_state,
                                    token], note=info)
    gr.on(
        [c.change for c in controls] + [token.select],  # a pick in the list: one event (.input fires twice)
        redraw,
        [state, *controls, token, overview_file, drawn_state],
        [*page_outputs, head],
        api_visibility="private",
        trigger_mode="always_last",
        show_progress_on=[info],  # never on the slider being moved
        **lanes.VIEWS,
    )
    csv_button.click(make_csvs, [state, *controls, token, folder_state, drawn_state],
                     [csv_files, folder_state, drawn_state], api_visibility="private", show_progress_on=[csv_files])
    shown_with.change(shape_sliders, [model_box, layer, head], [layer, head], api_visibility="private",
                      show_progress="hidden")
    overview.select(pick, state, [layer, head, mean], api_visibility="private")

    rollout_button.click(
        run_rollout, [text, text_pair, model_box, rollout_layer, hide, renorm, direction], [rollout_plot, rollout_csv],
        api_name="attention_rollout", **lanes.VIEWS,
    )
    add_head.click(lambda s, l, h: add_heads(s, l, h, False), [abl_heads, layer, head], abl_heads,
                   api_visibility="private")
    add_layer.click(lambda s, l, h: add_heads(s, l, h, True), [abl_heads, layer, head], abl_heads,
                    api_visibility="private")
    ablated = abl_button.click(
        run_ablation, [abl_text, abl_pair, model_box, abl_heads, abl_k, abl_answers], [abl_summary, abl_table],
        api_name="head_ablation",
    )
    common.clear_on_refusal(ablated, [abl_summary, abl_table], note=abl_summary)
