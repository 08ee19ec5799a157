"""The page's gr.Tabs holds only tabs.

Anything else directly under gr.Tabs (even an invisible gr.State) shifts the index Gradio's frontend
gives every later tab, and such a tab registered itself a second time when first opened: the tab bar
showed "Pretrain" twice. The browser check is in tests/e2e/test_pretrain_browser.py.
"""

from __future__ import annotations


def test_every_child_of_the_tabs_is_a_tab(tmp_path):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    cfg = build_app(AppContext.for_tests(tmp_path)).get_config_file()
    types = {c["id"]: c["type"] for c in cfg["components"]}

    def under_tabs(node):
        for child in node.get("children") or []:
            if types.get(node["id"]) == "tabs":
                yield types[child["id"]]
            yield from under_tabs(child)

    children = list(under_tabs(cfg["layout"]))
    assert children == ["tabitem"] * 10, children  # Learn first, then the eight views, then Class


def _shown(demo, tab_id: str):
    """The handler that draws the tab's parts when it is shown (its select's, or on the Pretrain tab the one chained
    after the select's status line): (its outputs, a call -> [(output, value)])."""
    import gradio as gr

    tab = next(b for b in demo.blocks.values() if isinstance(b, gr.Tab) and b.id == tab_id)
    fn = next(f for f in demo.fns.values() if any(t[0] in (tab, tab._id) and t[1] == "select" for t in f.targets))
    fn = next((f for f in demo.fns.values() if f.trigger_after == fn._id), fn)
    values = [getattr(c, "value", None) for c in fn.inputs[1:]]
    return fn.outputs, lambda: list(zip(fn.outputs, fn.fn({}, None, *values)))


def test_a_page_opened_during_a_run_shows_the_run_when_the_tab_is_shown(tmp_path):
    """The Pretrain tab reads its run when it is shown, not when the page opens, so "No pretraining run yet"
    never flashes: until then the status says it is reading."""
    import gradio as gr

    from bertdemo.context import AppContext
    from bertdemo.ui import build_app
    from bertdemo.ui.pretrain_tab import READING
    from tests.helpers import tiny_run_config, wait_until, wiki_corpus_file

    ctx = AppContext.for_tests(tmp_path)
    demo = build_app(ctx)
    status = next(c for c in demo.blocks.values() if getattr(c, "elem_id", None) == "pt-status")
    assert status.value == READING and getattr(status, "load_event_to_attach", None) is None
    probe_box = next(c for c in demo.blocks.values() if getattr(c, "label", "") == "Your probe sentence (one or more [MASK])")
    expected_box = next(c for c in demo.blocks.values() if getattr(c, "label", "") == "Expected word at the first [MASK]")
    default_probe = probe_box.value
    assert expected_box.value == "paris"  # the default probe's word
    _, show = _shown(demo, "pretrain")
    assert dict(show())[status].startswith("No pretraining run yet")
    run = ctx.pretrain_runs.start(tiny_run_config(wiki_corpus_file(tmp_path), tmp_path / "runs", steps=100_000,
                                         probe_text="He was born [MASK] London.", probe_expected="in"))
    try:
        wait_until(lambda: run.snapshot().steps or not run.active, message=lambda: run.snapshot().message)
        shown = dict(show())
        assert run.run_id in shown[status] and "No pretraining run yet" not in shown[status]
        assert "(smoothed)" in shown[status]  # a logged train loss too
        probe_value, expected_value = shown[probe_box]["value"], shown[expected_box]["value"]
        timer = next(value for output, value in shown.items() if isinstance(output, gr.Timer))
        assert probe_value == "He was born [MASK] London." != default_probe and expected_value == "in"  # its probe
        assert timer["active"] is True  # a live run: the tab's timer starts
    finally:
        run.stop()
        run.join(30)


def test_the_attention_sliders_fit_the_model_before_the_first_answer(tmp_path, tiny_mlm_dir):
    """A 2-layer, 2-head model: Layer and Head stop at 1 from the moment the tab is shown (they were 0-23, 0-15);
    not on the page open (ui/first_show.py: the tab's box changes when the tab is shown with a model)."""
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    demo = build_app(AppContext.for_tests(tmp_path, default_model=str(tiny_mlm_dir)))
    fitted = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "shape_sliders"]
    config = demo.get_config_file()
    box = next(c["id"] for c in config["components"] if c["props"].get("elem_id") == "attention-shown")
    triggers = [list(t) for d in config["dependencies"] if d["id"] in {f._id for f in fitted} for t in d["targets"]]
    assert triggers == [[box, "change"]]  # the tab shown, or the model changed while it is on screen
    layer, head = fitted[0].fn(str(tiny_mlm_dir), 20, 7)
    assert (layer["maximum"], layer["value"], head["maximum"], head["value"]) == (1, 1, 1, 1)


def test_a_queued_run_is_shown_when_the_tab_opens_and_keeps_its_poll_live(tmp_path):
    """The Fine-tune tab, shown while this browser's fine-tune waits behind a pretraining run: the queue line
    names its place and the tab's timer starts (no fine-tuning run is live; the waiting one is)."""
    import gradio as gr

    from bertdemo.context import AppContext
    from bertdemo.ui import build_app
    from bertdemo.ui.finetune_tab import POLL_SECONDS
    from bertdemo.ui.tab_poll import IDLE_SECONDS
    from tests.helpers import tiny_run_config, wait_until, wiki_corpus_file

    ctx = AppContext.for_tests(tmp_path)
    demo = build_app(ctx)
    owner = next(c for c in demo.blocks.values() if getattr(c, "elem_id", None) == "pt-owner")
    line = next(c for c in demo.blocks.values() if getattr(c, "elem_id", None) == "ft-queue")
    run = ctx.pretrain_runs.start(tiny_run_config(wiki_corpus_file(tmp_path), tmp_path / "runs", steps=100_000))
    try:
        wait_until(lambda: run.snapshot().steps or not run.active, message=lambda: run.snapshot().message)
        _, show = _shown(demo, "finetune")
        shown = dict(show())
        timer = next(value for output, value in shown.items() if isinstance(output, gr.Timer))
        # nothing of this tab is live: it looks again at the idle pace
        assert timer == {"__type__": "update", "value": IDLE_SECONDS, "active": True} and shown[line] == ""
        place = ctx.runs.start_or_queue("browser-token", "", "fine-tuning run", lambda: ctx.finetune_runs.start(
            {"epochs": 0.01}, "browser-token"))
        assert place.position == 1
        owner.value = "browser-token"  # the page's owner token, as its localStorage gave it
        _, show = _shown(demo, "finetune")
        shown = dict(show())
        timer = next(value for output, value in shown.items() if isinstance(output, gr.Timer))
        assert "number 1 in the queue" in shown[line]
        assert timer == {"__type__": "update", "value": POLL_SECONDS, "active": True}
        assert ctx.runs.cancel_queued("browser-token", "")
    finally:
        run.stop()
        run.join(30)
