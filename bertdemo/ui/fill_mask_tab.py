"""The Fill-Mask tab: top-k bars per [MASK], the filled sentence, target-word probabilities."""

from __future__ import annotations

import gradio as gr

from bertdemo.explore import fill_mask

from bertdemo.viz import bars
from bertdemo.models.store import ModelStore
from bertdemo.ui.common import progress_callback, user_errors

EXAMPLES = [
    ["Nice to [MASK] you.", "", 5, "meet, see"],
    ["The capital of France is [MASK].", "", 5, "paris"],
    ["I drank a cup of [MASK] this morning.", "", 10, "coffee, tea"],
    ["The [MASK] barked at the [MASK].", "", 5, ""],
    ["She opened the door.", "Then she [MASK] into the room.", 5, "walked"],
]


def _targets_markdown(result: fill_mask.FillMaskResult) -> str:
    """A table of the requested target words at each mask (or why one cannot be scored)."""
    if not result.masks or not result.masks[0].targets:
        return ""
    lines = ["| mask | word | probability | rank |", "|---|---|---|---|"]
    for m in result.masks:
        for t in m.targets:
            if t.prob is None:
                lines.append(f"| #{m.index + 1} | {t.word} | — | {t.message} |")
            else:
                lines.append(f"| #{m.index + 1} | {t.word} | {t.prob:.4f} | {t.rank} |")
    return "\n".join(lines)


def _as_json(result: fill_mask.FillMaskResult) -> list[dict]:
    return [
        {
            "mask": m.index + 1,
            "position": m.position,
            "predictions": [{"token": c.token, "id": c.id, "prob": round(c.prob, 6)} for c in m.candidates],
            "targets": [
                {"word": t.word, "prob": t.prob, "rank": t.rank, "message": t.message} for t in m.targets
            ],
        }
        for m in result.masks
    ]


def head_notice(store: ModelStore, model: str) -> str:
    """A persistent notice when the chosen model cannot fill masks (no trained MLM head)."""
    try:
        loaded = store.get(model)
    except ValueError:
        return ""
    if loaded.has_mlm_head:
        return ""
    return (
        f"> ⚠️ **{loaded.name} has no trained masked-LM head**, so Fill-Mask cannot predict with it "
        "(a random head would only show noise). Choose instead: `bert-base-uncased`, "
        "`distilbert-base-uncased` or `roberta-base` when the model hub is reachable; a model in a "
        "local folder; or a checkpoint you trained in the **Pretrain** tab."
    )


def build(store: ModelStore, model_box: gr.Dropdown) -> gr.Markdown:
    """Lay out the tab inside the current Blocks context; returns its notice box for the model picker."""

    @user_errors
    def run_fill_mask(text: str, text_pair: str, model: str, top_k: float, targets: str, progress=gr.Progress()):
        loaded = store.get(model, progress=progress_callback(progress))
        words = [w for w in (targets or "").split(",") if w.strip()]
        result = fill_mask.predict(loaded, text, text_pair, int(top_k), words)
        return (
            bars.fill_mask_figure(result.masks),
            f"**Filled with the top choices:** {result.filled_text}",
            _targets_markdown(result),
            _as_json(result),
        )

    with gr.Tab("Fill-Mask", id="fill-mask"):
        gr.Markdown(
            "BERT was trained to guess hidden words. Put `[MASK]` where a word is missing; "
            "each mask gets its own ranked guesses (all masks are predicted at once, independently)."
        )
        notice = gr.Markdown(elem_id="fm-notice")
        with gr.Row():
            text = gr.Textbox(label="Text with [MASK]", value=EXAMPLES[0][0], lines=2, elem_id="fm-text")
            text_pair = gr.Textbox(label="Sentence B (optional, segment 1)", lines=2)
        with gr.Row():
            top_k = gr.Slider(1, fill_mask.MAX_TOP_K, value=5, step=1, label="Top-k")
            targets = gr.Textbox(
                label="Target words (optional, comma-separated)",
                placeholder="meet, see",
                info="Their probability at each mask, even outside the top-k.",
            )
        button = gr.Button("Predict", variant="primary", elem_id="fm-run")
        filled = gr.Markdown(elem_id="fm-filled")
        plot = gr.Plot(label="Predictions", elem_id="fm-plot")
        target_table = gr.Markdown()
        with gr.Accordion("Raw predictions (JSON)", open=False):
            raw = gr.JSON()
        gr.Examples(EXAMPLES, inputs=[text, text_pair, top_k, targets])

    inputs = [text, text_pair, model_box, top_k, targets]
    outputs = [plot, filled, target_table, raw]
    button.click(run_fill_mask, inputs, outputs, api_name="fill_mask")
    text.submit(run_fill_mask, inputs, outputs, api_visibility="private")
    return notice
