"""Train both: the masked-LM twin, then the left-to-right twin, in one turn of the training slot, on the same
batches for the same steps; the curves overlay both, each named; the estimate says how long the pair takes."""

from __future__ import annotations

import json

from bertdemo.models import twins
from bertdemo.pretrain.budget import SpeedBook, flops_per_token
from bertdemo.pretrain.checkpoints import latest_checkpoint
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.run import TwinRun
from bertdemo.settings import ServerSettings
from bertdemo.viz.run_curves import CurveRun, training_curves_spec
from tests.helpers import run_services, wiki_corpus_file

SMALL = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
             seq_len=32, batch_size=8, steps=6, log_every=2, eval_every=3, eval_batches=1, checkpoint_every=0)


def _service(tmp_path):
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache")
    return run_services(settings, speeds=SpeedBook(lambda device: 1e9))[1]


def test_train_both_trains_the_twins_on_one_data_order_and_overlays_them(tmp_path) -> None:
    runs, service, _ = run_services(ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache"),
                                    speeds=SpeedBook(lambda device: 1e9))
    heard = []
    runs.on_start.append(lambda visitor, run_id, kind: heard.append((visitor, run_id, kind)))
    corpus = wiki_corpus_file(tmp_path / "corpus")
    run = service.start({**SMALL, "corpus": corpus, "train_both": True, "time_budget_s": 300.0}, visitor="member:ada")
    assert isinstance(run, TwinRun)
    assert run.join(120) and run.status == "finished", run.snapshot().message
    ltr_id, mlm_id = run.run_id, run.twin_id
    assert mlm_id and ltr_id != mlm_id
    # each twin is a run its starter made (a class records both in its member's gallery)
    assert heard == [("member:ada", mlm_id, run.kind), ("member:ada", ltr_id, run.kind)]
    saved = {}
    for run_id in (mlm_id, ltr_id):
        folder = latest_checkpoint(tmp_path / "runs" / run_id)
        config = TrainConfig.from_json(folder / "train_config.json")
        state = json.loads((folder / "trainer_state.json").read_text())
        saved[run_id] = (config, state)
    (mlm_cfg, mlm_state), (ltr_cfg, ltr_state) = saved[mlm_id], saved[ltr_id]
    assert (mlm_cfg.objective.objective, ltr_cfg.objective.objective) == ("mlm", "ltr")
    assert mlm_cfg.replace(objective="ltr") == ltr_cfg  # one recipe: only the objective differs
    assert mlm_cfg.optim.time_budget_s == 0  # steps end both: the same number of steps
    assert mlm_state["step"] == ltr_state["step"] == 6
    assert json.loads((latest_checkpoint(tmp_path / "runs" / ltr_id) / "config.json").read_text())["is_decoder"]
    curves = service.compared([])
    labels = [label for label, _ in curves]
    assert len(curves) == 2 and labels[0].startswith("left-to-right LM · started ")  # the pair ended: not "live"
    assert labels[1].startswith("masked LM · started ")
    # the overlay draws only what both measure on one scale: the held-out loss on the same words, no train losses
    spec = training_curves_spec([CurveRun(label, snap) for label, snap in curves])
    names = [t.get("name", "") for t in spec["data"]]
    assert not [n for n in names if n.endswith((": train", ": train (raw)"))]
    assert sum(n.endswith(": held-out, the same words") for n in names) == 2
    lead = next(a["text"] for a in spec["layout"]["annotations"] if a["text"].startswith("Held-out loss on the same"))
    (_, mlm_snap), (_, ltr_snap) = curves[1], curves[0]
    a, b = mlm_snap.eval_loss[-1], ltr_snap.eval_loss[-1]
    who = "the masked LM" if a < b else "the left-to-right LM"
    assert f"at step 6: {who} ahead by {abs(a - b):.2f} nats ({a:.2f} vs {b:.2f})" in lead
    assert (mlm_snap.objective, ltr_snap.objective) == ("mlm", "ltr")


def test_the_estimate_of_train_both_counts_both_twins(tmp_path) -> None:
    service = _service(tmp_path)
    text = service.time_estimate({**SMALL, "train_both": True})
    assert text.startswith("**Train both**") and "masked-LM twin" in text and "left-to-right twin" in text
    assert "about about" not in text and "**about " in text  # the duration says "about" once
    # the pair is placed on the shipped twins' curve: 6 steps x 8 blocks x 32 tokens = 1,536 tokens each
    assert "On the shipped twins' curve (Pretrain → The B in BERT): your pair: 1,536 tokens" in text
    # the form's shape is not the shipped twins': the shipped crossover is said to be a landmark, not a prediction
    assert f"({twins.shape_text()}): about" in text and "Yours is another shape (1 layer, hidden 32, 2 heads)" in text
    mlm = TrainConfig.from_flat(**SMALL)
    # a left-to-right step projects every position onto the vocabulary, a masked LM's only the masked 15 %
    assert flops_per_token(mlm.replace(objective="ltr")) > flops_per_token(mlm)


def test_train_both_is_refused_with_a_resume_or_a_value_that_is_not_a_yes_or_no(tmp_path) -> None:
    import pytest

    service = _service(tmp_path)
    with pytest.raises(ValueError, match="train_both must be true or false"):
        service.start({**SMALL, "train_both": "yes please"})
    with pytest.raises(ValueError, match="cannot resume"):
        service.start({**SMALL, "train_both": True, "resume_from": "run:x/checkpoint"})


def test_train_both_is_refused_with_next_sentence_prediction_and_nothing_starts(tmp_path) -> None:
    """The twins differ in the objective alone (the paper's "No NSP" rows): NSP would give the masked-LM twin a
    second objective the left-to-right one cannot have."""
    import pytest

    service = _service(tmp_path)
    with pytest.raises(ValueError, match="Train both compares the objectives alone.*turn NSP off"):
        service.start({**SMALL, "train_both": True, "nsp": True})
    assert service.runs.current is None


def test_a_wrong_objective_is_refused_without_echoing_it(tmp_path) -> None:
    import pytest

    service = _service(tmp_path)
    for value in ("x" * 5_000, list(range(3_000))):
        with pytest.raises(ValueError, match="objective") as refused:
            service.start({**SMALL, "objective": value})
        assert len(str(refused.value)) < 200
