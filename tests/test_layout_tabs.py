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


def test_a_page_opened_during_a_run_shows_the_run_at_once(tmp_path):
    """The Pretrain status is read when the page loads, so "No pretraining run yet" never flashes."""
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app
    from tests.helpers import tiny_run_config, wait_until, wiki_corpus_file

    ctx = AppContext.for_tests(tmp_path)
    demo = build_app(ctx)
    status = next(c for c in demo.blocks.values() if getattr(c, "elem_id", None) == "pt-status")
    on_load = status.load_event_to_attach[0]
    assert on_load().startswith("No pretraining run yet")
    probe_box = next(c for c in demo.blocks.values() if getattr(c, "label", "") == "Your probe sentence (one or more [MASK])")
    expected_box = next(c for c in demo.blocks.values() if getattr(c, "label", "") == "Expected word at the first [MASK]")
    default_probe = probe_box.load_event_to_attach[0]()
    assert expected_box.load_event_to_attach[0]() == "paris"  # the default probe's word
    run = ctx.pretrain_runs.start(tiny_run_config(wiki_corpus_file(tmp_path), tmp_path / "runs", steps=100_000,
                                         probe_text="He was born [MASK] London.", probe_expected="in"))
    try:
        wait_until(lambda: run.snapshot().steps or not run.active, message=lambda: run.snapshot().message)
        shown = on_load()  # a logged train loss too
        assert run.run_id in shown and "No pretraining run yet" not in shown and "(smoothed)" in shown
        assert probe_box.load_event_to_attach[0]() == "He was born [MASK] London." != default_probe  # its probe
        assert expected_box.load_event_to_attach[0]() == "in"
    finally:
        run.stop()
        run.join(30)


def test_the_attention_sliders_fit_the_model_before_the_first_answer(tmp_path, tiny_mlm_dir):
    """A 2-layer, 2-head model: Layer and Head stop at 1 from the moment the page opens (they were 0-23, 0-15)."""
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    demo = build_app(AppContext.for_tests(tmp_path, default_model=str(tiny_mlm_dir)))
    fitted = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "shape_sliders"]
    config = demo.get_config_file()
    triggers = {(t[1]) for d in config["dependencies"] if d["id"] in {f._id for f in fitted} for t in d["targets"]}
    assert {"load", "change"} <= triggers  # on page load and on each model change
    layer, head = fitted[0].fn(str(tiny_mlm_dir), 20, 7)
    assert (layer["maximum"], layer["value"], head["maximum"], head["value"]) == (1, 1, 1, 1)
