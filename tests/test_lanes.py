"""The queue's lanes (bertdemo/ui/lanes.py) on the built page: requests that run no model wait behind no forward
pass, and the most clicked model views share one bounded lane instead of one lane each."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    return build_app(AppContext.for_tests(tmp_path_factory.mktemp("app")))


def _by_api_name(demo) -> dict:
    from bertdemo import compat

    return {fn.api_name: fn for fn in compat.event_handlers(demo) if fn.api_name}


@pytest.mark.parametrize("api_name", ["tokenize", "encode", "lookup", "compare_tokenizers"])
def test_tokenizer_endpoints_run_in_the_light_lane_without_a_limit(demo, api_name):
    fn = _by_api_name(demo)[api_name]
    assert (fn.concurrency_id, fn.concurrency_limit) == ("light", None)


@pytest.mark.parametrize("api_name", ["attention", "attention_weights", "attention_rollout", "inside_embeddings",
                                      "inside_layer", "logit_lens", "mlm_loss", "param_breakdown"])
def test_attention_and_inside_share_one_bounded_lane(demo, api_name):
    fn = _by_api_name(demo)[api_name]
    assert (fn.concurrency_id, fn.concurrency_limit) == ("views", "default")


def test_the_pages_own_events_follow_their_endpoints_lanes(demo):
    """The page's Tokenize, Show attention and Look inside clicks, and every code panel's opening."""
    from bertdemo import compat

    ids = {block.elem_id: block._id for block in demo.blocks.values() if getattr(block, "elem_id", None)}
    lanes = {}
    for fn in compat.event_handlers(demo):
        for block, event in fn.targets:
            lanes.setdefault((block, event), set()).add((fn.concurrency_id, fn.concurrency_limit))
    assert lanes[(ids["tok-run"], "click")] == {("light", None)}
    assert lanes[(ids["att-run"], "click")] == {("views", "default")}
    assert lanes[(ids["in-run"], "click")] == {("views", "default")}
    panels = [fn for fn in compat.event_handlers(demo) for _, event in fn.targets if event == "expand"
              and any(getattr(demo.blocks.get(o._id), "elem_id", "") in ("att-code", "in-code", "tok-code", "fm-code")
                      for o in fn.outputs)]
    assert len(panels) == 4 and all((fn.concurrency_id, fn.concurrency_limit) == ("light", None) for fn in panels)


@pytest.mark.parametrize("stem", ["draw_step", "check_guess", "show_me", "grade_concept",
                                  "mask_sample", "mask_epochs", "next_epoch", "nsp_pairs"])
def test_the_learn_paths_answers_and_the_masking_labs_draws_run_in_the_light_lane(demo, stem):
    """They run no model (bertdemo/ui/heavy_requests.py declares them light): under a class they wait behind no
    forward pass, nor four at a time in a lane of their own."""
    from bertdemo import compat
    from bertdemo.ui.heavy_requests import LIGHT, declaration

    fns = [fn for fn in compat.event_handlers(demo) if (fn.api_name or "").rstrip("_0123456789") == stem]
    assert all(declaration(fn.api_name) is LIGHT for fn in fns)
    assert fns and all((fn.concurrency_id, fn.concurrency_limit) == ("light", None) for fn in fns)


def test_the_masking_labs_click_is_light_and_next_sentence_prediction_is_not(demo):
    by_name = _by_api_name(demo)
    assert (by_name["nsp_predict"].concurrency_id, by_name["nsp_predict"].concurrency_limit) != ("light", None)
    assert (by_name["mask_sample"].concurrency_id, by_name["mask_sample"].concurrency_limit) == ("light", None)
