"""A live pretraining run in the launched app, driven through gradio_client.

Start -> the run streams steps and losses -> the other tabs keep answering -> pause holds
the step -> resume -> stop writes a checkpoint that Fill-Mask can load by its path.
"""

from __future__ import annotations

from itertools import pairwise

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from bertdemo.pretrain.checkpoints import latest_checkpoint
from tests.helpers import wait_until

from .api import poll

# A very small custom model on short blocks keeps the run quick on 2 cores.
RUN = dict(
    preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
    corpus="wiki", seq_len=32, batch_size=8, steps=5000, lr=2e-3, warmup_steps=5, eval_every=10,
    checkpoint_every=0, probe_text="The capital of France is [MASK].", seed=1,
)


def status(client: Client) -> dict:
    return poll(client, api_name="/run_status") or {}


def wait_for(client: Client, predicate, timeout_s: float = 180.0) -> dict:
    """The run's status once ``predicate`` holds (polled every 0.5 s, at most ``timeout_s``, generous for a busy
    machine); fails at once on a failed run, with a short message."""
    seen: list[dict] = [{}]

    def reached() -> bool:
        seen[0] = status(client)
        assert seen[0].get("status") != "failed", f"the run failed: {str(seen[0].get('message'))[:300]}"
        return bool(predicate(seen[0]))

    wait_until(reached, timeout=timeout_s, interval=0.5, what="the run's expected state",
               message=lambda: f"{seen[0].get('status')} at step {seen[0].get('step')}: {str(seen[0].get('message'))[:200]}")
    return seen[0]


def test_live_run_pause_resume_stop_and_query_checkpoint(app_url, runs_dir):
    client = Client(app_url, verbose=False)
    message = client.predict(RUN, api_name="/start_run")
    assert "run" in message.lower()
    try:
        queued = client.predict(RUN, api_name="/start_run")  # the slot is busy: a second start waits its turn
        assert "is number 1 in the queue for the training slot" in queued
        assert client.predict(api_name="/queue_status")["position"] == 1
        assert client.predict(api_name="/cancel_queued") == "Your queued run is cancelled."
        assert client.predict(api_name="/queue_status") is None

        snap = wait_for(client, lambda s: s.get("status") == "running" and len(s.get("eval_loss", [])) >= 2)
        assert snap["train_loss"] and snap["tokens_per_s"] > 0 and snap["device"]
        assert snap["probe"] and len(snap["probe"][-1][1][0]) == 5  # top-5 at the probe's mask
        # the honest held-out figures, the landmarks on the same questions, the probes' ranks, the timeline
        assert snap["heldout_eval"] == "mask-only 15%" and len(snap["top5_acc"]) == len(snap["median_rank"]) >= 2
        assert set(snap["landmarks"]) == {"uniform", "unigram", "left", "both"}
        assert snap["landmark_labels"]["left"] == "uses the word before"
        assert snap["landmarks"]["uniform"] > snap["landmarks"]["unigram"] > snap["landmarks"]["left"]
        assert [t["expected"] for t in snap["probe_tracks"]][-1] == "paris" and all(
            len(t["ranks"]) == len(snap["probe_steps"]) for t in snap["probe_tracks"])
        assert isinstance(snap["plateau"], bool) and isinstance(snap["timeline"], list)
        # the default locality bias: the strength each evaluation ran with, full at the first, fading after
        help_ = snap["locality_strength"]
        assert snap["locality_plan"] == "fades" and len(help_) == len(snap["eval_steps"]) and help_[0] == 1.0
        assert all(later <= earlier for earlier, later in pairwise(help_)) and help_[-1] < 1.0

        # The inference tabs keep answering while the run trains.
        _, _stats, table = client.predict("Still answering?", "", "", api_name="/tokenize")
        assert table["data"][0][1] == "[CLS]"
        _, filled, _, predictions = client.predict("Nice to [MASK] you.", "", "", 3, "", "", False,
                                                   api_name="/fill_mask")
        assert len(predictions[0]["predictions"]) == 3 and "[MASK]" not in filled
        _, _, info = client.predict("The cat sat.", "", "", 0, 0, False, False, True, "all", api_name="/attention")
        assert "tokens" in info
        assert status(client)["status"] == "running"

        client.predict(api_name="/pause_run")
        # "paused" is reported by the training loop itself, from inside its wait: it holds at this step
        paused = wait_for(client, lambda s: s.get("status") == "paused", 120)
        assert paused["message"] == "Paused."
        client.predict(api_name="/resume_run")
        wait_for(client, lambda s: s.get("step", 0) > paused["step"], 180)

        with pytest.raises(AppError, match="MASK"):
            client.predict("no mask in this probe", api_name="/set_probe")
        with pytest.raises(AppError, match="one word"):
            client.predict("Paris is the [MASK] of France.", "", "the capital", api_name="/set_probe")
        client.predict("Paris is the [MASK] of France.", "", "capital", api_name="/set_probe")
        tracked = wait_for(client, lambda s: any(t["expected"] == "capital" for t in s.get("probe_tracks", [])), 180)
        own = [t for t in tracked["probe_tracks"] if t.get("own")]
        assert [(t["text"], t["expected"]) for t in own] == [("Paris is the [MASK] of France.", "capital")]
        assert own[0]["ranks"][-1] >= 1
    finally:
        client.predict(api_name="/stop_run")
    stopped = wait_for(client, lambda s: s.get("status") in {"stopped", "finished"}, 180)
    name = stopped["last_checkpoint"]  # named as the model lists name it, never by its server folder
    checkpoint = latest_checkpoint(runs_dir / stopped["run_id"])  # the step folder its LATEST pointer names
    assert name == f"run:{stopped['run_id']}/checkpoint" and str(runs_dir) not in name
    assert (checkpoint / "metrics.csv").read_text().startswith("step,")
    csv_text = client.predict(stopped["run_id"], api_name="/run_metrics_csv")  # the content, not a server path
    assert csv_text.startswith("step,") and str(runs_dir) not in csv_text and "/tmp" not in csv_text

    _, _, _, predictions = client.predict(
        "The capital of France is [MASK].", "", name, 5, "", api_name="/fill_mask"
    )
    assert len(predictions[0]["predictions"]) == 5

    # Resume the stopped run from its checkpoint: the step count carries on to the new total.
    done = stopped["step"]
    with pytest.raises(AppError, match="above"):
        client.predict({**RUN, "resume_from": name, "steps": done}, api_name="/start_run")
    client.predict({**RUN, "resume_from": str(checkpoint), "steps": done + 15}, api_name="/start_run")  # a folder too
    resumed = wait_for(client, lambda s: s.get("status") == "finished", 180)
    assert resumed["run_id"] == stopped["run_id"] and resumed["step"] == done + 15
    assert resumed["steps"][0] == stopped["steps"][0]  # the metric history was restored
