"""Fine-tuning in the launched app: pretrain a tiny run, fine-tune its checkpoint on the topic task through the
API, classify with the result (the same numbers as stock transformers), probe the layers, and see it all in the
Fine-tune tab at desktop and phone width."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from gradio_client import Client
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from tests.e2e.api import wait_status
from tests.e2e.axe import axe_violations
from tests.e2e.conftest import screenshot
from tests.e2e.pages import open_tab, resize, set_open


@pytest.fixture(scope="module")
def finetuned(app_url, pretrained_run):
    client = Client(app_url, verbose=False)
    # a few planned steps and no time budget: the run trains whatever the machine's load (a busy machine's 30 s
    # budget could end it before its first step, once the final evaluation's time is kept inside the budget)
    client.predict({"init": f"run:{pretrained_run}/checkpoint", "epochs": 0.1, "time_budget_s": 0, "seed": 3},
                   api_name="/start_finetune")
    snap = wait_status(client, lambda s: s.get("kind") == "finetune" and s.get("status") == "finished" and s["checkpoint"])
    return client, snap


def test_a_pretraining_checkpoint_is_fine_tuned_and_reported(finetuned):
    client, snap = finetuned
    assert snap["task"] == "topic" and len(snap["labels"]) == 11
    assert snap["new_weights"] == ["bert.pooler", "classifier"]
    assert len(snap["val_accuracy"]) == len(snap["val_macro_f1"]) == len(snap["eval_steps"]) >= 2
    assert snap["eval_steps"][0] == 0 and 0 <= snap["val_accuracy_all"] <= 1
    assert sum(map(sum, snap["confusion"])) == 1355  # the whole validation split
    assert isinstance(snap["baselines"], dict) and snap["checkpoint"].startswith("ft:")
    assert "init_path" not in snap["settings"]
    assert "FINISHED" in client.predict("", api_name="/pause_run")  # the run controls answer for either kind


def test_classify_answers_with_the_checkpoints_own_numbers(finetuned, runs_dir):
    client, snap = finetuned
    text = "The cello is a bowed string instrument."
    answer = client.predict(text, snap["checkpoint"], api_name="/classify")
    folder = Path(runs_dir) / ".finetune" / snap["run_id"] / "model"
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.inference_mode():
        probs = model(**AutoTokenizer.from_pretrained(folder)(text, return_tensors="pt")).logits.softmax(-1)[0]
    expected = {model.config.id2label[i]: float(p) for i, p in enumerate(probs)}
    assert answer["probabilities"] == pytest.approx(expected, abs=1e-5)
    with pytest.raises(Exception, match="no fine-tuned model"):
        client.predict(text, "ft:nope", api_name="/classify")


def test_layer_probes_of_the_served_model_with_their_controls(finetuned, model):
    client, _ = finetuned
    result = client.predict(model, "bigram_shift", api_name="/probe_layers")
    assert len(result["mean"]) == len(result["cls"]) == len(result["random_mean"]) == 3  # embeddings + 2 layers
    assert result["majority_accuracy"] == pytest.approx(0.5, abs=0.05)  # swapped or not: balanced by construction


def test_a_fine_tuned_run_fills_masks_and_is_probed_like_any_model(finetuned, runs_dir):
    """A link or a pick with a fine-tuned run's id stacked "not in the local cache" four times: ft:<id> is the
    fine-tuned encoder with its start's masked-LM head, in Fill-Mask and the layer probes."""
    from tests.e2e.api import fill

    client, snap = finetuned
    name = snap["checkpoint"]
    _, _, _, raw = fill(client, "The cello is a [MASK] instrument.", name, top_k=5)
    folder = Path(runs_dir) / ".finetune" / snap["run_id"] / "model"
    from bertdemo.models.loading import load_masked_lm
    from bertdemo.models.policy import AccessPolicy

    loaded = load_masked_lm(name, policy=AccessPolicy(runs_dir=runs_dir))  # the same composition, in-process
    assert loaded.has_mlm_head and Path(loaded.path) == folder
    enc = loaded.tokenizer("The cello is a [MASK] instrument.", return_tensors="pt")
    with torch.inference_mode():
        probs = loaded.model(**enc).logits[0, enc["input_ids"][0].tolist().index(loaded.tokenizer.mask_token_id)].softmax(-1)
    answered = raw[0]["predictions"]
    assert len(answered) == 5
    ids = loaded.tokenizer.convert_tokens_to_ids([p["token"] for p in answered])
    assert [p["prob"] for p in answered] == pytest.approx([float(probs[i]) for i in ids], abs=1e-5)
    probed = client.predict(name, "bigram_shift", api_name="/probe_layers")
    assert probed["model"] == name and len(probed["mean"]) == 3


def test_the_layer_change_of_the_run(finetuned):
    client, snap = finetuned
    change = client.predict(snap["checkpoint"], api_name="/layer_change")
    assert change["layers"] == ["embeddings", "layer 1", "layer 2"] and change["sentences"] == 256
    assert snap["step"] == 20  # 0.1 of an epoch: 0.1 x (6,323 // 32) steps
    assert all(w > 0 for w in change["weight_change"]), change
    assert all(0 < c <= 1 + 1e-9 for c in change["cka"]), change
    assert change["mlm_loss_before"] > 0 and change["mlm_loss_after"] > 0 and change["masked_pieces"] > 256
    with pytest.raises(Exception, match="no fine-tuned model"):
        client.predict("ft:nope", api_name="/layer_change")


def test_the_fine_tune_tab_shows_the_run(finetuned, browser_page, app_url):
    """The tab as the run left it, at 1280 px; then at a phone's 390 px, axe and a screenshot of the same page."""
    _, snap = finetuned
    page = browser_page
    page.goto(app_url + "?tab=finetune")
    open_tab(page, "Fine-tune")
    page.wait_for_function("() => (document.querySelector('#ft-status')?.innerText || '').includes('FINISHED')",
                           timeout=120_000)
    assert snap["run_id"] in page.inner_text("#ft-status")
    assert "Newly initialized" in page.inner_text("#ft-new")
    page.wait_for_selector("#ft-curves .js-plotly-plot", timeout=60_000)
    status = page.inner_text("#ft-status")
    # a start from a pretraining run is read against its own control (random weights of its shape), not the
    # stored runs of the embedded model's shape; until that control has run, the status says how to get it
    assert "is read against its control, random weights of this run's shape" in status, status
    assert "stored reference" not in status and "nan" not in status.lower()
    page.wait_for_function("() => document.querySelectorAll('#ft-curves .legendtext').length > 0", timeout=60_000)
    legend = page.locator("#ft-curves .legendtext").evaluate_all("els => els.map(e => e.textContent)")
    # the stored random runs are of the embedded model's shape: not drawn as the control of a run start
    assert legend and not any("stored reference" in t for t in legend), legend
    # the accuracy axis's title fits the figure's height (a long one ran off it, over the loss panel's ticks); the
    # line under the chart says which mark is which split
    figure, title = (page.locator(s).first.bounding_box() for s in ("#ft-curves .main-svg", "#ft-curves .g-y2title"))
    assert figure["y"] <= title["y"] and title["y"] + title["height"] <= figure["y"] + figure["height"], (figure, title)
    assert "◆ and dashes: test" in page.inner_text("#ft-reference")
    assert axe_violations(page) == []  # the tab as a run's curves draw it (the all-tabs pass: before any run)
    # "Start from" ends before its arrow: an ellipsis, never a letter cut under the ▾
    assert page.locator("#ft-init input").evaluate("i => getComputedStyle(i).textOverflow") == "ellipsis"
    set_open(page.locator("#ft-change-box button.label-wrap"))
    page.locator("#ft-change-run input").click()
    page.get_by_role("option").first.click()
    page.click("#ft-change")
    page.wait_for_function("() => (document.querySelector('#ft-change-md')?.innerText || '').includes('CKA')",
                           timeout=240_000)
    assert "Forgetting, measured" in page.inner_text("#ft-change-md")
    screenshot(page, "finetune_1280")
    resize(page, 390, 1000)
    assert axe_violations(page) == []
    screenshot(page, "finetune_390")
    # the sentence's "." after the reference's long command sits on the command's last line, not on a line of its own
    ends = page.locator("#ft-reference code").evaluate("""c => { const r = document.createRange();
        r.setStart(c.nextSibling, 0); r.setEnd(c.nextSibling, 1); const rects = [...c.getClientRects()];
        return [c.nextSibling.textContent, rects.length, Math.round(rects.at(-1).top), Math.round(r.getClientRects()[0].top)]; }""")
    assert ends[0] == "." and ends[1] >= 2 and abs(ends[2] - ends[3]) <= 4, ends
