"""One rule for heavy requests: every event handler of the built app is declared in the registry, every model
handler goes through the budget wrapper, and the budget does what it says: a public request past its allowance
is refused before it runs with a sentence saying what to lower, the heavy slots refuse one more, and the
deadline and a gone client stop attribution, the neighbour index and layer probes between batches."""

from __future__ import annotations

import gradio as gr
import pytest
from transformers import BertConfig

from bertdemo import compat
from bertdemo.context import AppContext
from bertdemo.explore import attribution, corpus_neighbours
from bertdemo.finetune import layer_probes
from bertdemo.finetune.features import ActivationCache
from bertdemo.models import embedded
from bertdemo.request_budget import WorkBudget, WorkStopped, attribution_gflop, sequence_gflop
from bertdemo.ui import build_app, heavy_requests
from bertdemo.ui.heavy_requests import ENDPOINTS, apply_budgets, declaration, goes_through_budget

LONG = "The " + "old " * 55 + "cat sat on the [MASK]."  # 64 tokens with [CLS] and [SEP]
MODEL_VIEWS = {"fill_mask", "attention", "inside_layer", "word_in_context", "corpus_neighbours", "attribution",
               "probe_layers", "classify", "nsp_predict", "learn_step"}


@pytest.fixture(scope="module")
def public_app(tmp_path_factory):
    ctx = AppContext.for_tests(tmp_path_factory.mktemp("public"), public=True,
                               default_model=embedded.EMBEDDED_MLM_NAME)
    demo = build_app(ctx)
    ctx.loader.start()  # as app.py does once the page is served
    return ctx, demo


def _handler(demo: gr.Blocks, api_name: str):
    return next(f.fn for f in compat.event_handlers(demo) if f.api_name == api_name)


def test_every_endpoint_is_declared_and_every_model_endpoint_goes_through_the_budget(public_app):
    _, demo = public_app
    handlers = [f for f in compat.event_handlers(demo) if f.fn is not None]
    undeclared = sorted(f.api_name for f in handlers if declaration(f.api_name) is None)
    assert undeclared == [], f"declare these in bertdemo/ui/heavy_requests.py ENDPOINTS: {undeclared}"
    model = {f.api_name for f in handlers if declaration(f.api_name).kind == "model"}
    skipped = sorted(f.api_name for f in handlers if f.api_name in model and not goes_through_budget(f.fn))
    assert skipped == []
    assert MODEL_VIEWS <= model  # every view that runs a model is declared as one
    assert {f.api_name for f in handlers if not goes_through_budget(f.fn)} & MODEL_VIEWS == set()
    assert {e.kind for e in ENDPOINTS.values()} == {"model", "light"}


def test_a_new_handler_the_registry_does_not_name_is_reported(tmp_path):
    ctx = AppContext.for_tests(tmp_path)
    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.submit(lambda text: text, box, box, api_name="mystery_view")
        box.change(lambda text: text, box, box, api_name="tokenize")
    assert apply_budgets(demo, ctx) == ["mystery_view"]


def test_a_public_attribution_past_its_allowance_is_refused_saying_what_to_lower(public_app):
    _, demo = public_app
    handler = _handler(demo, "attribution")
    with pytest.raises(gr.Error, match=r"with 300 steps \(about [\d,]+ GFLOP\); this server computes at most 1,000 "
                                       r"per request\. Use fewer integrated-gradient steps, a shorter sentence"):
        handler(LONG, 1, "", "integrated gradients", 300, "")
    answer = handler("The cat sat on the [MASK].", 1, "", "integrated gradients", 20, "")  # within it: answered
    assert answer["steps"] == 20 and answer["tokens"][0] == "[CLS]"


def test_the_heavy_slots_refuse_one_more_attribution(public_app):
    ctx, demo = public_app
    with (ctx.heavy.take("whole words"), ctx.heavy.take("whole words"),
          pytest.raises(gr.Error, match=r"busy with other long requests \(attribution\)")):
        _handler(demo, "attribution")("The cat sat on the [MASK].", 1, "", "occlusion", 20, "")


def test_the_budget_a_handler_gets_is_its_endpoints_on_a_public_server_and_unbounded_in_process():
    public = heavy_requests.budget_for(heavy_requests.PROBES, public=True)
    local = heavy_requests.budget_for(heavy_requests.PROBES, public=False)
    assert (public.max_gflop, public.seconds) == (6_000, 240.0)
    assert local.max_gflop == float("inf") and local.seconds == 600.0
    assert heavy_requests.current_budget().max_gflop == float("inf")  # outside a wrapped handler


def test_the_attribution_estimate_is_steps_times_tokens_times_the_model():
    base = BertConfig()  # bert-base: 12 layers of 768
    one = sequence_gflop(base, 64)
    assert attribution_gflop(base, 64, 300, ("integrated gradients",)) == pytest.approx((3 + 3 * 300) * one)
    assert attribution_gflop(base, 64, 300, ("occlusion",)) == pytest.approx((3 + 64) * one)
    assert 9_000 < attribution_gflop(base, 64, 300, ("integrated gradients",)) < 11_000  # about 10 TFLOP


def _clock_after(checks: int):
    """A budget whose clock passes its 30 s deadline after ``checks`` checks; the checks it saw."""
    seen = []
    now = [0.0]

    def should_stop() -> bool:
        seen.append(1)
        if len(seen) >= checks:
            now[0] = 31.0
        return False

    return WorkBudget(max_gflop=float("inf"), seconds=30.0, started=0.0, clock=lambda: now[0],
                      should_stop=should_stop), seen


def test_a_deadline_stops_integrated_gradients_between_batches(tiny_loaded):
    budget, seen = _clock_after(3)
    with pytest.raises(ValueError, match="took longer than 30 s and was stopped"):
        attribution.attribute(tiny_loaded, "The cat sat on the [MASK].", 1, "", ("integrated gradients",), 300,
                              budget=budget)
    assert len(seen) == 3  # 300 steps are 12 batches: it stopped at the third


def test_a_gone_client_stops_the_neighbour_index_and_layer_probes_between_batches(tiny_loaded, tokenizer):
    checks = []

    def gone_after_two() -> bool:
        checks.append(1)
        return len(checks) > 2

    with pytest.raises(WorkStopped, match="client went away"):
        corpus_neighbours.neighbour_index(tiny_loaded, 1, 4_321, budget=WorkBudget(should_stop=gone_after_two))
    assert len(checks) == 3
    checks.clear()
    with pytest.raises(WorkStopped, match="client went away"):
        layer_probes.probe_layers("tiny", tiny_loaded.model, tokenizer, ActivationCache(), tasks=("length",),
                                  budget=WorkBudget(should_stop=gone_after_two))
    assert len(checks) == 3


def test_a_probe_of_a_model_past_the_allowance_is_refused_before_it_runs(tiny_loaded, tokenizer):
    with pytest.raises(ValueError, match=r"layer probes of 1,000 sentences through 2 models \(about [\d.,]+ GFLOP\); "
                                         r"this server computes at most 0 per request\. Probe a smaller model\."):
        layer_probes.probe_layers("tiny", tiny_loaded.model, tokenizer, ActivationCache(), tasks=("length",),
                                  budget=WorkBudget(max_gflop=0.0))
