"""The Tokenizer tab: WordPiece chips, the token table, counts, vocabulary lookup, two tokenizers side by side."""

from __future__ import annotations

import gradio as gr

from bertdemo.explore import tokens
from bertdemo.models.store import ModelStore
from bertdemo.viz.chips import TABLE_HEADERS, render_chips, render_stats, table_rows
from bertdemo.ui.common import user_errors

EXAMPLE_A = "I love tokenization! Unbelievably, BERT splits rare words into pieces."
EXAMPLE_B = "Sentence B gets segment id 1."


def _max_length(tokenizer) -> int:
    """The tokenizer's declared input limit (512 for BERT when it declares none)."""
    limit = getattr(tokenizer, "model_max_length", 512)
    return limit if isinstance(limit, int) and 0 < limit < 100_000 else 512


def build(store: ModelStore, model_box: gr.Dropdown) -> None:
    """Lay out the tab inside the current Blocks context and wire its events."""

    @user_errors
    def run_tokenize(text: str, text_pair: str, model: str):
        tok = store.get_tokenizer(model)
        table = tokens.tokenize(tok, text, text_pair, max_length=_max_length(tok))
        return render_chips(table), render_stats(table), table_rows(table)

    @user_errors
    def run_lookup(model: str, token: str, token_id):
        """Both lookups at once; a bad entry in one is reported inline without hiding the other."""
        tok = store.get_tokenizer(model)
        try:
            token_md = f"`{token.strip()}` → id **{tokens.lookup_token(tok, token)}**"
        except ValueError as exc:
            token_md = f"⚠️ {exc}"
        try:
            id_md = f"id **{int(token_id)}** → `{tokens.lookup_id(tok, token_id)}`"
        except (ValueError, TypeError) as exc:
            id_md = f"⚠️ {exc}"
        return token_md, id_md, [list(item) for item in tokens.special_tokens(tok)]

    @user_errors
    def run_compare(text: str, text_pair: str, left: str, right: str):
        outputs = []
        for name in (left, right):
            tok = store.get_tokenizer(name)
            table = tokens.tokenize(tok, text, text_pair, max_length=_max_length(tok))
            outputs += [f"#### {name}\n\n" + render_stats(table), render_chips(table)]
        return outputs

    with gr.Tab("Tokenizer", id="tokenizer"):
        gr.Markdown(
            "See text the way BERT does: WordPiece splits words it does not know into pieces, "
            "adds `[CLS]` and `[SEP]`, and gives every token an id, a segment and a position."
        )
        with gr.Row():
            text = gr.Textbox(label="Sentence A", value=EXAMPLE_A, lines=2, elem_id="tok-text")
            text_pair = gr.Textbox(label="Sentence B (optional)", value="", lines=2, elem_id="tok-pair")
        button = gr.Button("Tokenize", variant="primary", elem_id="tok-run")
        chips = gr.HTML(elem_id="tok-chips")
        stats = gr.Markdown(elem_id="tok-stats")
        table = gr.Dataframe(headers=TABLE_HEADERS, label="Tokens", interactive=False, wrap=True)
        gr.Examples(
            [[EXAMPLE_A, ""], ["The cat sat on the mat.", EXAMPLE_B], ["Emoji 🤗 and naïve café", ""]],
            inputs=[text, text_pair],
        )

        with gr.Accordion("Vocabulary lookup", open=False):
            with gr.Row():
                lookup_token = gr.Textbox(label="Token → id", value="love", scale=2)
                token_out = gr.Markdown()
            with gr.Row():
                lookup_id = gr.Number(label="Id → token", value=103, precision=0, scale=2)
                id_out = gr.Markdown()
            specials = gr.Dataframe(headers=["role", "token", "id"], label="Special tokens", interactive=False)
            gr.Button("Look up", elem_id="tok-lookup").click(
                run_lookup,
                [model_box, lookup_token, lookup_id],
                [token_out, id_out, specials],
                api_name="lookup",
            )

        with gr.Accordion("Compare two tokenizers", open=False):
            gr.Markdown("The same text through two tokenizers (e.g. uncased vs cased).")
            with gr.Row():
                left = gr.Dropdown(store.choices(), value=store.default, label="Left", allow_custom_value=True)
                right = gr.Dropdown(store.choices(), value="bert-base-cased", label="Right", allow_custom_value=True)
            compare = gr.Button("Compare")
            with gr.Row():
                with gr.Column():
                    left_stats, left_chips = gr.Markdown(), gr.HTML()
                with gr.Column():
                    right_stats, right_chips = gr.Markdown(), gr.HTML()
            compare.click(
                run_compare,
                [text, text_pair, left, right],
                [left_stats, left_chips, right_stats, right_chips],
                api_name="compare_tokenizers",
            )

    button.click(run_tokenize, [text, text_pair, model_box], [chips, stats, table], api_name="tokenize")
    gr.on(
        [text.submit, text_pair.submit],
        run_tokenize,
        [text, text_pair, model_box],
        [chips, stats, table],
        api_visibility="private",
    )
