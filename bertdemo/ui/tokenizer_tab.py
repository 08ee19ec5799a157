"""The Tokenizer tab: WordPiece chips, what a notebook prints, the token table, counts,
vocabulary lookup, two tokenizers side by side (offline by default)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo.explore import tokens, wordpiece_learn
from bertdemo.models import availability
from bertdemo.snippets import views as snippets
from bertdemo.ui import common, lanes
from bertdemo.ui.code_panel import code_panel
from bertdemo.ui.common import labelled_choices
from bertdemo.viz import wordpiece as wordpiece_view
from bertdemo.viz.chips import TABLE_HEADERS, notebook_view, render_chips, render_stats, table_rows

if TYPE_CHECKING:
    from bertdemo.context import AppContext
    from bertdemo.models.store import ModelStore

EXAMPLE_A = "I love tokenization! Unbelievably, BERT splits rare words into pieces."
EXAMPLE_B = "Sentence B gets segment id 1."
MAX_LINES = 8  # a long paste scrolls inside the box instead of growing the page
REFUSED = "**This text was refused** (the message at the top of the page says why). Change it and press Tokenize."
# The Text / IDs toggle only flips an attribute the chips' CSS reads: no server round trip.
_VIEW_JS = "(v) => { document.documentElement.dataset.chipView = (v === 'IDs') ? 'ids' : 'text'; return []; }"


def _max_length(tokenizer) -> int:
    """The tokenizer's declared input limit (512 for BERT when it declares none)."""
    limit = getattr(tokenizer, "model_max_length", 512)
    return limit if isinstance(limit, int) and 0 < limit < 100_000 else 512


def _compare_choices(store: ModelStore) -> list[tuple[str, str]]:
    cased = (f"{availability.CASED_TOKENIZER_NAME} (offline, cased, tokenizer only)", availability.CASED_TOKENIZER_NAME)
    return labelled_choices(store) + [cased]


def _table(store: ModelStore, model: str, text: str, text_pair: str):
    """(who answered, token table) for one tokenizer choice."""
    requested = availability.requested_name(store, model)
    tokenizer = availability.get_tokenizer(store, requested)
    table = tokens.tokenize(tokenizer, text, text_pair, max_length=_max_length(tokenizer))
    return availability.tokenizer_answered_by(requested, tokenizer), table


def build(ctx: AppContext, model_box: gr.Dropdown, page: gr.Blocks | None = None) -> None:
    """Lay out the tab inside the current Blocks context and wire its events (``page``: a first result
    when the tab is shown)."""
    user_errors = functools.partial(common.user_errors, public=ctx.settings.is_public)  # no server path shown
    store = ctx.models

    @user_errors
    def run_tokenize(text: str, text_pair: str, model: str):
        """The tokens as the page shows them (chips, counts, and a table of ids, segments and mask per token).

        Args:
            text: Sentence A, the text to tokenize.
            text_pair: Sentence B (optional): the pair is encoded as [CLS] A [SEP] B [SEP], B as segment 1.
            model: The model whose tokenizer answers: a hub id, an embedded model or a run's checkpoint.
        """
        who, table = _table(store, model, text, text_pair)
        stats = render_stats(table) + f"\n\n*Tokenizer:* **{who}**"
        return render_chips(table), stats, table_rows(table)

    @user_errors
    def run_page(text: str, text_pair: str, model: str):
        """The browser's answer: one tokenization for the chips, counts, table and the notebook view."""
        who, table = _table(store, model, text, text_pair)
        stats = render_stats(table) + f"\n\n*Tokenizer:* **{who}**"
        return render_chips(table), stats, table_rows(table), notebook_view(table)

    @user_errors
    def run_lookup(model: str, token: str, token_id):
        """Both lookups at once; a bad entry in one is reported inline without hiding the other."""
        tokenizer = store.get_tokenizer(model)
        try:
            token_md = f"`{token.strip()}` → id **{tokens.lookup_token(tokenizer, token)}**"
        except ValueError as exc:
            token_md = f"⚠️ {exc}"
        try:
            entry = tokens.lookup_id(tokenizer, token_id)
            id_md = f"id **{int(token_id)}** → `{entry}`"
        except ValueError as exc:
            id_md = f"⚠️ {exc}"
        return token_md, id_md, [list(item) for item in tokens.special_tokens(tokenizer)]

    @user_errors
    def learn_wordpiece(word: str, model: str) -> tuple[str, str]:
        """Why the model's tokenizer splits ``word`` as it does, and a WordPiece vocabulary learnt on a small
        text at growing sizes, with the word under each."""
        word = wordpiece_learn.check_word(word)
        requested = availability.requested_name(store, model)
        tokenizer = availability.get_tokenizer(store, requested)
        who = availability.tokenizer_answered_by(requested, tokenizer)
        split = wordpiece_view.split_markdown(wordpiece_learn.model_split(tokenizer, word), who, len(tokenizer))
        return split, wordpiece_view.learning_markdown(wordpiece_learn.learn_vocabulary(word))

    @user_errors
    def run_compare(text: str, text_pair: str, left: str, right: str):
        outputs = []
        for name in (left, right):
            who, table = _table(store, name, text, text_pair)
            outputs += [f"#### {who}\n\n" + render_stats(table), render_chips(table)]
        return outputs

    @user_errors
    def encode(text: str, text_pair: str = "", model: str = "") -> dict:
        """What `tokenizer(text, text_pair)` returns in a notebook — input_ids, token_type_ids,
        attention_mask — with the tokens and the model whose tokenizer answered.

        Args:
            text: Sentence A, the text to encode.
            text_pair: Sentence B (optional): the pair is encoded as [CLS] A [SEP] B [SEP], B as segment 1.
            model: The model whose tokenizer answers; empty: the server's default model.
        """
        who, table = _table(store, model, text, text_pair)
        return {"tokenizer": who, "tokens": [r.token for r in table.rows], **table.encoding(),
                "truncated": table.truncated}

    with gr.Tab("Tokenizer", id="tokenizer") as tab:
        gr.Markdown(
            "See text the way BERT does: WordPiece splits words it does not know into pieces, "
            "adds `[CLS]` and `[SEP]`, and gives every token an id, a segment and a position."
        )
        with gr.Row():
            text = gr.Textbox(label="Sentence A", value=EXAMPLE_A, lines=2, max_lines=MAX_LINES, elem_id="tok-text")
            text_pair = gr.Textbox(label="Sentence B (optional)", value="", lines=2, max_lines=MAX_LINES,
                                   elem_id="tok-pair")
        button = gr.Button("Tokenize", variant="primary", elem_id="tok-run")
        gr.Examples(
            [[EXAMPLE_A, ""], ["The cat sat on the mat.", EXAMPLE_B], ["Emoji 🤗 and naïve café", ""],
             ["Typed specials: Nice to [MASK] you. [SEP] Bye", ""]],
            inputs=[text, text_pair],
        )
        view = gr.Radio(["Text", "IDs"], value="Text", label="Chips show", elem_id="tok-view",
                        container=False)
        chips = gr.HTML(elem_id="tok-chips")
        stats = gr.Markdown(elem_id="tok-stats")
        encoding = gr.Code(label="What a notebook prints: tokenizer(text, text_pair)", language="python",
                           interactive=False, elem_id="tok-encoding", max_lines=12)
        table = gr.Dataframe(headers=TABLE_HEADERS, label="Tokens", interactive=False, elem_id="tok-table")
        code = code_panel(ctx, snippets.tokenizer_code, [model_box, text, text_pair], elem_id="tok-code")

        with gr.Accordion("Vocabulary lookup", open=False):
            with gr.Row():
                lookup_token = gr.Textbox(label="Token → id (Enter looks it up)", value="love", scale=2,
                                          max_length=tokens.MAX_TOKEN_CHARS, elem_id="tok-lookup-token")
                token_out = gr.Markdown(elem_id="tok-lookup-token-out")
            with gr.Row():
                lookup_id = gr.Number(label="Id → token", value=103, precision=0, scale=2)
                id_out = gr.Markdown()
            specials = gr.Dataframe(headers=["role", "token", "id"], label="Special tokens", interactive=False)
            lookup_in, lookup_out = [model_box, lookup_token, lookup_id], [token_out, id_out, specials]
            for looked_up in (
                gr.Button("Look up", elem_id="tok-lookup").click(run_lookup, lookup_in, lookup_out, api_name="lookup",
                                                                 **lanes.LIGHT),
                gr.on([lookup_token.submit, lookup_id.submit], run_lookup, lookup_in, lookup_out,
                      api_visibility="private", **lanes.LIGHT),
            ):  # a refused look-up leaves no answer of the boxes before on screen
                common.clear_on_refusal(looked_up, lookup_out, note=token_out)

        with gr.Accordion("Where do the pieces come from? WordPiece, learnt from text", open=False,
                          elem_id="tok-wordpiece"):
            gr.Markdown("BERT's vocabulary (30,522 pieces for bert-base-uncased) is not a dictionary: it was "
                        "learnt from its pretraining text. See why a word splits as it does, and learn a small "
                        "vocabulary here from a small text.")
            with gr.Row():
                wp_word = gr.Textbox(label="A word (Enter learns)", value="tokenization", scale=2,
                                     max_length=wordpiece_learn.MAX_WORD_CHARS, elem_id="tok-wp-word")
                wp_run = gr.Button("Split it and learn a vocabulary", scale=1, elem_id="tok-wp-run")
            wp_split = gr.Markdown(elem_id="tok-wp-split")
            wp_learnt = gr.Markdown(elem_id="tok-wp-learnt")
            common.clear_on_refusal(
                gr.on([wp_run.click, wp_word.submit], learn_wordpiece, [wp_word, model_box], [wp_split, wp_learnt],
                      api_visibility="private", show_progress_on=[wp_split], **lanes.LIGHT),
                [wp_split, wp_learnt], note=wp_split)

        with gr.Accordion("Compare two tokenizers", open=False):
            gr.Markdown("The same text through two tokenizers: uncased (lowercased, accents stripped) "
                        "vs cased. Both work offline.")
            choices = _compare_choices(store)
            with gr.Row():
                left = gr.Dropdown(choices, value=store.default, label="Left", allow_custom_value=True)
                right = gr.Dropdown(choices, value=availability.CASED_TOKENIZER_NAME, label="Right",
                                    allow_custom_value=True, elem_id="tok-right")
            compare = gr.Button("Compare", elem_id="tok-compare")
            with gr.Row():
                with gr.Column(min_width=160):
                    left_stats, left_chips = gr.Markdown(), gr.HTML()
                with gr.Column(min_width=160):
                    right_stats, right_chips = gr.Markdown(elem_id="tok-right-stats"), gr.HTML()
            compared = [left_stats, left_chips, right_stats, right_chips]
            common.clear_on_refusal(compare.click(
                run_compare,
                [text, text_pair, left, right],
                compared,
                api_name="compare_tokenizers", show_progress_on=[left_stats, right_stats], **lanes.LIGHT,
            ), compared, note=left_stats)

    inputs, outputs = [text, text_pair, model_box], [chips, stats, table]
    with tab:  # API-only endpoints (a gr.Tabs holds only tabs): the page asks run_page, one event per click
        gr.api(encode, api_name="encode", **lanes.LIGHT)
        gr.Button(visible=False).click(run_tokenize, inputs, outputs, api_name="tokenize", **lanes.LIGHT)
    view.change(None, view, None, js=_VIEW_JS, api_visibility="private")
    tokenized = gr.on([button.click, text.submit, text_pair.submit], *code.fold(run_page, inputs, [*outputs, encoding]),
                      api_visibility="private", **lanes.LIGHT)  # one round trip: an open code panel refreshed too
    # a refused text leaves no tokens of the text before on screen under gradio's "Error" badges (an emptied box kept
    # the last 1,002 chips): the panels say it was refused, the toast why
    tokenized.failure(lambda: ("", REFUSED, None, "# the text was refused: nothing to print"), None,
                      [chips, stats, table, encoding], api_visibility="private", show_progress="minimal",
                      **lanes.LIGHT)  # its status replaces the badges
    if page is not None:  # a first result when the tab is shown (the example, not empty panels), not on page open
        tab.select(run_page, inputs, [*outputs, encoding], api_visibility="private", **lanes.LIGHT)
