"""Text a visitor typed reaches no page as markup: a deep link's sentence, a probe, a model name or a link's
bad value is shown as typed wherever it is rendered as Markdown, HTML (a toast) or a Plotly label.

The payload is the one gradio's Markdown sanitizer lets through (an SVG link to ``javascript:``), with a
backtick that closed the old inline-code spans. Markdown is rendered with markdown-it (CommonMark with raw
HTML on, as the page's renderer) and the result parsed: no element but the app's own may appear, and
the visitor's text must be visible as text.
"""

from __future__ import annotations

import warnings
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from bertdemo.explore import inside, inside_output, nsp, order_probe
from bertdemo.explore.fill_mask import predict
from bertdemo.learn import path as learn_path
from bertdemo.pretrain.metrics import MetricsBuffer
from bertdemo.viz import bars, inside as draw_inside, masking, run_curves

SVG = '<svg><a href="javascript:alert(1)">x</a></svg>'
TEXT = f"The cat sat. ` {SVG} ` It was tired."  # the backticks closed the Learn steps' code spans
PLAIN = f"The cat sat. {SVG} It was tired."  # where the sentence went in raw
SAFE_TAGS = {"p", "b", "strong", "em", "code", "br", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
             "blockquote", "span", "sup", "details", "summary", "hr", "h3", "h4", "pre", "div"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def parsed(html: str) -> _Tags:
    tags = _Tags()
    tags.feed(html)
    return tags


def assert_inert_markdown(md: str) -> None:
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    page = parsed(html)
    assert {tag for tag, _ in page.tags} <= SAFE_TAGS, html
    assert not [a for _, attrs in page.tags for a in attrs if "javascript" in str(a[1]).lower()], html
    assert 'href="javascript:alert(1)"' in "".join(page.text), html  # shown as typed


def assert_toast_shows_as_typed(message: str, typed: str) -> None:
    """A toast's message is plain text, the visitor's ``typed`` in it as typed (no entities: an API caller reads the
    same text); the page writes its ``&``, ``<`` and ``>`` as entities before it renders it (the served patch
    ``TOAST_TEXT``; tests/e2e/test_deep_link_markup.py shows ``<img src=x>`` as text in the browser): no markup."""
    from bertdemo.frontend_patch import PATCHES, TOAST_TEXT

    assert typed in message and "&lt;" not in message, message
    assert TOAST_TEXT in PATCHES
    (_, replacement), = TOAST_TEXT.edits
    assert all(f"/{c}/g,`&{name};`" in replacement for c, name in (("&", "amp"), ("<", "lt"), (">", "gt")))
    page = parsed(message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))  # as the page does
    assert page.tags == [] and typed in "".join(page.text), message


def test_the_fill_mask_sentence_shows_the_visitors_text_as_typed(tiny_loaded):
    result = predict(tiny_loaded, PLAIN.replace("tired", "[MASK]"), text_pair="<b>B</b>")
    md = bars.filled_markdown(result)
    assert_inert_markdown(md)
    assert md.count("**") == 2  # the one filled word is still bold
    # bold beside punctuation with no space around it (Markdown's ** was shown as typed there: "首都**,**です")
    glued = bars.filled_markdown(predict(tiny_loaded, "東京は日本の首都[MASK]です。"))
    html = MarkdownIt("commonmark", {"html": True}).render(glued)
    assert html.count("<strong>") == 1 and "**" not in html, html


@pytest.mark.parametrize("step", sorted(learn_path.ANSWERS))
@pytest.mark.parametrize("text", [TEXT, PLAIN])
def test_every_learning_step_shows_the_sentence_as_typed(tiny_loaded, step, text):
    answer = learn_path.answer(tiny_loaded, step, text)
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(answer.answer)
    assert {tag for tag, _ in parsed(html).tags} <= SAFE_TAGS, html


@pytest.mark.parametrize("step", ["loss", "outputs", "no-positions"])
def test_the_steps_that_quote_the_sentence_show_it_as_typed(tiny_loaded, step):
    assert_inert_markdown(learn_path.answer(tiny_loaded, step, TEXT).answer)


def test_inside_berts_loss_and_order_sections_show_the_sentence_as_typed(tiny_loaded):
    masked = PLAIN.replace("tired", "[MASK]")
    assert_inert_markdown(draw_inside.loss_markdown(inside_output.mlm_loss(tiny_loaded, masked, "tired")))
    order = draw_inside.order_markdown(inside.order_test(tiny_loaded, PLAIN), tiny_loaded.name)
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(order)
    assert {tag for tag, _ in parsed(html).tags} <= SAFE_TAGS, html


def test_the_order_probe_and_nsp_answers_show_the_text_as_typed(tiny_loaded):
    result = order_probe.order_probe(tiny_loaded, PLAIN.replace("tired", "[MASK]"))
    assert_inert_markdown(run_curves.order_probe_markdown(result, "run-1"))
    pred = nsp.predict_is_next(tiny_loaded, PLAIN, "<b>B</b>")
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(masking.nsp_markdown(pred))
    assert {tag for tag, _ in parsed(html).tags} <= SAFE_TAGS, html


def test_the_probe_chart_labels_show_a_probe_as_typed():
    """Plotly reads <a href>, <b>, <span style> in trace names and marker text: a probe shown to every
    visitor's chart must come out as characters (entities Plotly turns back into < and >)."""
    probe = "Paris is the <a href='http://127.0.0.9/p'>[MASK]</a> <span style='font-size:90px'>BIG</span>."
    buffer = MetricsBuffer()
    buffer.log_probe_ranks(0, [(probe, "<b>x</b>", True, [("x", 0.5)], 9000)])
    buffer.log_probe_ranks(1, [(probe, "<b>x</b>", True, [("x", 0.5)], 1)])
    spec = run_curves.probe_ranks_spec(buffer.snapshot())
    labels = [t.get("name", "") for t in spec["data"]] + [x for t in spec["data"] for x in t.get("text") or []]
    labels += [x for t in spec["data"] for x in t.get("hovertext") or []]
    assert any("&lt;a href=" in label for label in labels), labels
    assert not [label for label in labels if "<" in label], labels


def test_a_toast_shows_a_visitors_text_as_typed():
    import gradio as gr

    from bertdemo.ui.common import user_errors

    @user_errors
    def handler(model: str) -> str:
        raise ValueError(f"There is no run {model!r} on this server.")

    with pytest.raises(gr.Error) as caught:
        handler(SVG)
    assert_toast_shows_as_typed(caught.value.message, SVG)

    @user_errors(public=True)
    def broken(model: str) -> str:
        raise KeyError(SVG)

    with pytest.raises(gr.Error) as caught:
        broken("x")
    assert_toast_shows_as_typed(caught.value.message, "<svg>")  # a public server masks what looks like a path


def test_a_deep_links_warning_shows_the_bad_value_as_typed(tmp_path):
    """`/?tab=<img src=x>` named the tab in a toast, which rendered the image."""
    import gradio as gr
    from starlette.requests import Request

    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    demo = build_app(AppContext.for_tests(tmp_path))
    open_link = next(f.fn for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "open_link")
    scope = {"type": "http", "method": "GET", "path": "/", "headers": [],
             "query_string": b"tab=%3Cimg%20src%3Dx%3E&step=%3Cb%3Eloss&text=hi"}
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        open_link("", gr.Request(request=Request(scope)))
    messages = [str(w.message) for w in shown if "could not be followed" in str(w.message)]
    assert len(messages) == 1, [str(w.message) for w in shown]
    assert_toast_shows_as_typed(messages[0], "<img src=x>")


def test_the_model_status_line_shows_a_model_name_that_failed_as_typed(tmp_path, tiny_mlm_dir):
    """``⚠️ **{name}** could not load`` put a typed model name into the status Markdown raw."""
    from bertdemo.context import AppContext
    from bertdemo.ui.common import model_status

    ctx = AppContext.for_tests(tmp_path, default_model=str(tiny_mlm_dir))
    on_change = model_status(ctx.models)
    status, *_ = on_change(f"embedded/{SVG}", str(tiny_mlm_dir))
    assert "could not load" in status
    assert_inert_markdown(status)


def test_words_a_visitor_typed_label_the_charts_as_typed(tiny_loaded):
    """Target words (Fill-Mask) label Plotly bars, where Plotly reads <a href> and <span style>."""
    word = "<b>x</b>"
    result = predict(tiny_loaded, "The cat [MASK].", targets=word)
    labels = [y for trace in bars.fill_mask_figure(result.masks).data for y in (trace.y or [])]
    assert not [label for label in labels if "<b>" in str(label)], labels


LINK = "[bank](https://evil.example)"  # one "word" Word in context accepts: a Markdown link


def _rendered(md: str) -> _Tags:
    page = parsed(MarkdownIt("commonmark", {"html": True}).enable("table").render(md))
    assert {tag for tag, _ in page.tags} <= SAFE_TAGS, md  # no link
    return page


def test_word_in_context_shows_the_visitors_word_and_target_as_typed(tiny_loaded):
    from bertdemo.explore import attribution, corpus_neighbours, word_in_context
    from bertdemo.viz import words

    similar = word_in_context.similarities(tiny_loaded, LINK, f"We sat on the {LINK} of the river.\n"
                                                              f"The {LINK} raised its rates.")
    assert f"'{LINK}' is" in "".join(_rendered(words.similarity_markdown(similar)).text)
    near = corpus_neighbours.neighbours(tiny_loaded, f"See {LINK} now.", 2, 1, 3)  # token 2 is "["
    assert "nearest to [ (position 2)" in "".join(_rendered(words.neighbours_markdown(near)).text)
    why = attribution.attribute(tiny_loaded, "The cat sat on the [MASK] *", 1, "*", ("integrated gradients",), 4)
    assert "Why '*'? P(*) at the [MASK]" in "".join(_rendered(words.attribution_markdown(why)).text)
