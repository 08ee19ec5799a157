"""The levers that make a run's first minutes count: the fading locality bias on attention (and that the
default run still ends a stock BERT; its strength carried in the status, drawn on the curves and told in
the timeline), the neighbour initialisation, AdamW's beta2 and the time budget; and that the levers deleted
from the engine are refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertForMaskedLM

from bertdemo.models.embedded import tokenizer_dir, wiki_summaries
from bertdemo.models.partial_forward import encode_at
from bertdemo.models.store import load_masked_lm
from bertdemo.pretrain import budget, locality
from bertdemo.pretrain.checkpoints import latest_checkpoint
from bertdemo.pretrain.config import LTR, TrainConfig
from bertdemo.pretrain.metrics import MetricsBuffer, RunSnapshot
from bertdemo.pretrain.model import build_model, load_checkpoint_model, neighbour_offsets, starts_on_neighbours
from bertdemo.pretrain.trainer import DistInfo, Trainer, lr_at, make_optimizer, run_training
from bertdemo.runs.control import RunControl
from bertdemo.settings import ServerSettings
from bertdemo.viz import run_curves
from tests.helpers import run_services, tiny_bert_config, tiny_run_config, wiki_corpus_file

SENTENCE = "He was born [MASK] London and lived in the city for many years."


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(str(tokenizer_dir()))


def _model(seed: int = 0) -> BertForMaskedLM:
    torch.manual_seed(seed)
    return BertForMaskedLM(tiny_bert_config(hidden_size=32, num_attention_heads=4)).eval()


def _biased_attention_by_hand(model: BertForMaskedLM, ids: torch.Tensor, slopes: torch.Tensor) -> torch.Tensor:
    """The encoder's output with ``-slope_h |i - j|`` added to every head's scores, written out."""
    h = model.bert.embeddings(input_ids=ids)
    T = ids.shape[1]
    distance = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).abs().float()
    for layer in model.bert.encoder.layer:
        att = layer.attention.self
        heads, d = att.num_attention_heads, att.attention_head_size

        def split(x, heads=heads, d=d):
            return x.view(1, T, heads, d).transpose(1, 2)

        q, k, v = split(att.query(h)), split(att.key(h)), split(att.value(h))
        scores = q @ k.transpose(2, 3) / d ** 0.5 - slopes[None, :, None, None] * distance
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(1, T, -1)
        a = layer.attention.output(out, h)
        h = layer.output(layer.intermediate(a), a)
    return h


def test_alibi_slopes_are_the_standard_ones():
    assert locality.alibi_slopes(2) == [2 ** -4, 2 ** -8]
    assert locality.alibi_slopes(4) == [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8]
    assert locality.alibi_slopes(3) == [2 ** -4, 2 ** -8, 2 ** -2]  # 2 heads' slopes, then every other of 4's


def test_the_locality_bias_adds_the_distance_penalty_and_fades_to_a_stock_model(tokenizer):
    model = _model()
    ids = tokenizer(SENTENCE, return_tensors="pt")["input_ids"]
    stock = model.bert(input_ids=ids).last_hidden_state
    bias = locality.LocalityBias(model, factor=8.0, fade=0.5)
    assert bias.update(progress=0.25) == 0.5
    slopes = torch.tensor(locality.alibi_slopes(4)) * 8.0 * 0.5
    with torch.no_grad():
        torch.testing.assert_close(model.bert(input_ids=ids).last_hidden_state,
                                   _biased_attention_by_hand(model, ids, slopes), atol=1e-5, rtol=1e-4)
        assert (model.bert(input_ids=ids).last_hidden_state - stock).abs().max() > 1e-3  # 100x the tolerance above
        assert bias.update(progress=0.5) == 0.0  # faded: the stock attention again
        assert model.config._attn_implementation == "sdpa"
        torch.testing.assert_close(model.bert(input_ids=ids).last_hidden_state, stock)


def test_the_locality_bias_on_the_last_layer_at_chosen_positions_matches_the_full_forward(tokenizer):
    model = _model(1)
    locality.LocalityBias(model, factor=8.0, fade=0.0).update(progress=0.9)  # never fades
    ids = tokenizer([SENTENCE, SENTENCE.replace("London", "Paris")], return_tensors="pt")["input_ids"]
    positions = torch.tensor([[3, 7, 1], [0, 12, 5]])
    with torch.no_grad():
        full = model.bert(input_ids=ids).last_hidden_state
        with locality.query_positions(positions):
            sparse = encode_at(model.bert, ids, positions)
        torch.testing.assert_close(sparse, full.gather(1, positions[..., None].expand(-1, -1, full.shape[-1])),
                                   atol=1e-5, rtol=1e-4)
        with pytest.raises(ValueError, match="query_positions"):
            encode_at(model.bert, ids, positions)


@pytest.mark.slow  # a default-shaped pretraining run to its end
def test_the_default_run_ends_a_stock_bert_that_predicts_as_in_the_app(tmp_path, corpus, tokenizer):
    """The default levers (whatever they are) on a tiny run: its checkpoint loads in plain transformers,
    and the model the run trained, the app's loader and stock AutoModelForMaskedLM give the same logits."""
    cfg = tiny_run_config(corpus, tmp_path, steps=24)
    trainer = Trainer(cfg, MetricsBuffer(), tmp_path / "ck", DistInfo(), {}, torch.device("cpu"), RunControl())
    while trainer.step < cfg.optim.steps:
        trainer.train_step()
    assert trainer.locality_strength() == 0.0
    trainer.save()
    saved = latest_checkpoint(tmp_path / "ck")
    enc = tokenizer(SENTENCE, return_tensors="pt")
    stock = AutoModelForMaskedLM.from_pretrained(saved)
    assert type(stock) is BertForMaskedLM and stock.config.vocab_size == 30522
    app = load_masked_lm(str(saved), "cpu").model
    trainer.model.eval()
    with torch.no_grad():
        trained = trainer.model(**enc).logits
        torch.testing.assert_close(stock.eval()(**enc).logits, trained, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(app(**enc).logits, trained, atol=1e-4, rtol=1e-4)


def _neighbour_attention(model: BertForMaskedLM, ids: torch.Tensor) -> list[list[tuple[float, float, float]]]:
    """Per layer and head, the mean attention weight of query i on key i - 1, on i + 1 and on itself,
    from the model's own forward (eager attention, which returns its weights)."""
    model.set_attn_implementation("eager")
    with torch.no_grad():
        attentions = model.bert(input_ids=ids, output_attentions=True).attentions  # per layer (1, heads, T, T)
    model.set_attn_implementation("sdpa")
    at = torch.arange(ids.shape[1] - 1)
    return [[(float(a[at + 1, at].mean()), float(a[at, at + 1].mean()), float(a.diagonal().mean()))
             for a in layer[0]] for layer in attentions]


def test_neighbour_init_makes_each_head_attend_to_the_word_before_or_after_from_the_first_step(tokenizer):
    """The default shape (bert-tiny) on a real 128-token block: head 0 puts most of its weight on the word
    before, head 1 on the word after, in both layers; a plain initialisation spreads it over the block."""
    text = " ".join(wiki_summaries()[:20])
    ids = tokenizer(text, return_tensors="pt", truncation=True, max_length=128)["input_ids"]
    assert ids.shape == (1, 128)
    cfg = TrainConfig().replace(neighbour_init=True)
    torch.manual_seed(5)
    model = build_model(cfg, tokenizer).eval()
    assert neighbour_offsets(2) == [-1, 1] and neighbour_offsets(4) == [-1, 1, -2, 2]
    for layer in _neighbour_attention(model, ids):
        (before, after, itself), (before_1, after_1, itself_1) = layer
        assert before > 0.95 and after < 0.01 and itself < 0.01  # head 0: the word before
        assert after_1 > 0.95 and before_1 < 0.01 and itself_1 < 0.01  # head 1: the word after
    with torch.no_grad():  # what the run trains with (SDPA) computes the same
        eager = model.bert(input_ids=ids).last_hidden_state
        model.set_attn_implementation("eager")
        torch.testing.assert_close(model.bert(input_ids=ids).last_hidden_state, eager, atol=1e-5, rtol=1e-4)
    torch.manual_seed(5)
    plain = build_model(cfg.replace(neighbour_init=False), tokenizer).eval()
    for layer in _neighbour_attention(plain, ids):
        for head in layer:
            assert max(head) < 0.02  # about 1/128 on each key


def test_a_warm_start_from_a_half_precision_folder_trains_float32_weights_with_the_folders_values(tmp_path, tokenizer):
    torch.manual_seed(7)
    stored = build_model(TrainConfig(), tokenizer).half()  # as the shipped twins are stored
    stored.save_pretrained(tmp_path / "fp16")
    assert json.loads((tmp_path / "fp16" / "config.json").read_text())["dtype"] == "float16"
    for ltr in (False, True):
        warm = build_model(TrainConfig().replace(init_from=str(tmp_path / "fp16"), objective=LTR if ltr else "mlm"),
                           tokenizer)
        assert {p.dtype for p in warm.parameters()} == {torch.float32}
        torch.testing.assert_close(warm.bert.encoder.layer[0].attention.self.key.weight,
                                   stored.bert.encoder.layer[0].attention.self.key.weight.float())
    resumed = load_checkpoint_model(str(tmp_path / "fp16"), nsp=False)  # a resume reads its folder the same way
    assert {p.dtype for p in resumed.parameters()} == {torch.float32}


def test_neighbour_init_is_a_stock_bert_that_saves_and_loads_and_leaves_warm_starts_and_order_blind_models_alone(tmp_path, tokenizer):
    torch.manual_seed(6)
    cfg = TrainConfig().replace(neighbour_init=True)
    model = build_model(cfg, tokenizer).eval()
    assert type(model) is BertForMaskedLM
    model.save_pretrained(tmp_path / "ni")
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path / "ni").eval()
    assert type(loaded) is BertForMaskedLM
    assert json.loads((tmp_path / "ni" / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]
    enc = tokenizer(SENTENCE, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(loaded(**enc).logits, model(**enc).logits)
    warm = build_model(cfg.replace(init_from=str(tmp_path / "ni"), neighbour_init=True), tokenizer)
    torch.testing.assert_close(warm.bert.encoder.layer[0].attention.self.key.weight,
                               model.bert.encoder.layer[0].attention.self.key.weight)  # not initialised twice
    torch.manual_seed(6)  # an order-blind model has no neighbours to start on: the plain initialisation
    blind = build_model(cfg.replace(position_embeddings=False), tokenizer)
    torch.manual_seed(6)
    plain = build_model(cfg.replace(neighbour_init=False), tokenizer)
    torch.testing.assert_close(blind.bert.encoder.layer[0].attention.self.key.weight,
                               plain.bert.encoder.layer[0].attention.self.key.weight)
    assert blind.bert.embeddings.position_embeddings.weight.abs().max() == 0
    one_dim_heads = TrainConfig.from_flat(preset="custom", num_hidden_layers=1, hidden_size=8, num_attention_heads=8,
                                          intermediate_size=16)
    assert not starts_on_neighbours(one_dim_heads)  # nothing to rotate: the plain initialisation, not a failed run
    assert type(build_model(one_dim_heads, tokenizer)) is BertForMaskedLM
    assert starts_on_neighbours(cfg) and not starts_on_neighbours(cfg.replace(neighbour_init=False))


def test_beta2_and_time_budget(tmp_path, corpus):
    cfg = tiny_run_config(corpus, tmp_path, batch_size=8, adam_beta2=0.98, steps=100, lr=1e-3, warmup_steps=10,
                          time_budget_s=50.0)
    trainer = Trainer(cfg, MetricsBuffer(), None, DistInfo(), {}, torch.device("cpu"), RunControl())
    trainer.step = 25
    assert trainer.progress() == pytest.approx(0.25)
    trainer.train_seconds = 30.0  # the time budget is further along than the steps
    assert trainer.progress() == pytest.approx(0.6)
    assert lr_at(25, cfg, trainer.progress()) == pytest.approx(4e-4)  # decays as the budget runs out
    assert lr_at(3, cfg, trainer.progress()) == pytest.approx(4e-4)  # warmup by steps: 1e-3 * 4 / 10
    assert make_optimizer(trainer.model, cfg, torch.device("cpu")).param_groups[0]["betas"] == (0.9, 0.98)


def test_a_finished_run_continued_to_more_steps_warms_up_again_and_keeps_the_model_it_began_from(tmp_path, corpus):
    """A run that finished its schedule (6 steps, lr decayed to 0), continued to 12: its learning rate warms up
    again from its first new step (half the peak over a 2-step warm-up, then the peak) instead of jumping to the middle of a
    stretched schedule, decays to 0 at step 12, and its continuation keeps that start for a later resume; the save
    that ended the first schedule stays on disk among the milestones, and the curve tool asks it."""
    from bertdemo.pretrain.checkpoints import ended_schedule, read_state, rewarm_step, run_checkpoints
    from bertdemo.settings import DiskRules
    from bertdemo.tools.measure_twin_pairs import log_spaced

    cfg = tiny_run_config(corpus, tmp_path, steps=6, warmup_steps=2, lr=1e-3, log_every=1, checkpoint_every=1)
    disk = DiskRules(keep_checkpoints=2, keep_milestones=2)
    assert run_training(cfg, metrics=MetricsBuffer(), run_folder=tmp_path / "ck", disk=disk) == "finished"
    first = latest_checkpoint(tmp_path / "ck")
    assert read_state(first)["step"] == 6 and ended_schedule(first)
    metrics = MetricsBuffer()
    longer = cfg.replace(steps=12, resume_from=str(first))
    assert run_training(longer, metrics=metrics, run_folder=tmp_path / "ck", disk=disk) == "finished"
    snap = metrics.snapshot()
    lrs = dict(zip(snap.steps, snap.lr))
    assert lrs[6] == pytest.approx(1e-3 / 6)  # the first schedule's last step, decayed by its share done (5/6)
    assert lrs[7] == pytest.approx(1e-4 * 5)  # warmup again: (0 + 1) / 2 of the peak (not 1e-3 * 7/10 stretched)
    assert lrs[8] == pytest.approx(1e-3)
    assert lrs[12] == pytest.approx(1e-3 * 1 / 4)  # then by steps (not the time budget's share) down to 0 at 12
    assert lr_at(12, longer, None, 6) == 0.0 and lr_at(9, longer, None, 6) == pytest.approx(1e-3 * 3 / 4)
    last = latest_checkpoint(tmp_path / "ck")
    assert read_state(last)["rewarm_at"] == 6 and read_state(last)["step"] == 12
    # its clock goes on from the first schedule's, as the command line resumes it (no run info passed)
    assert read_state(last)["elapsed_s"] > read_state(first)["elapsed_s"] > 0
    assert snap.wall_s == sorted(snap.wall_s)  # one clock through both schedules
    assert snap.wall_s[-1] <= read_state(last)["elapsed_s"]
    assert rewarm_step({"step": 9, "total_steps": 12, "rewarm_at": 6}, 12) == 6  # a later resume keeps it
    assert rewarm_step({"step": 12, "total_steps": 12, "rewarm_at": 6}, 20) == 12  # continued again: from its end
    assert rewarm_step({"step": 3, "total_steps": 6}, 12) == 0  # stopped before its end: the schedule stretches
    assert rewarm_step({"step": 6, "total_steps": 6}, 6) == 0  # resumed to the same end: nothing to continue
    kept = [read_state(p)["step"] for p in run_checkpoints(tmp_path / "ck")]
    assert kept == [12, 11, 6, 2, 1]  # the latest two, two milestones and the model the continuation began from
    assert budget.kept_saves(longer, disk) == len(kept)  # what the disk estimate counts: one more than a run
    assert budget.kept_saves(cfg, disk) == disk.kept_per_run == 4  # that is not continued
    assert log_spaced([1, 2, 6, 11, 12], {6, 12}) == [1, 2, 6, 12]
    # continued again: the model each schedule began from stays (the first one too, no longer the latest restart)
    again = longer.replace(steps=14, resume_from=str(last))
    assert budget.kept_saves(again, disk) == disk.kept_per_run + 2
    assert run_training(again, metrics=MetricsBuffer(), run_folder=tmp_path / "ck", disk=disk) == "finished"
    assert read_state(latest_checkpoint(tmp_path / "ck"))["rewarm_at"] == 12
    kept = [read_state(p)["step"] for p in run_checkpoints(tmp_path / "ck")]
    assert kept == [14, 13, 12, 6, 2, 1] and len(kept) == budget.kept_saves(again, disk)


def _whole_and_resumed_at_4(cfg: TrainConfig, tmp_path: Path) -> tuple[MetricsBuffer, MetricsBuffer]:
    """``cfg`` trained uninterrupted (in ``whole``), and again resumed from that run's step-4 checkpoint (in ``part``,
    as a sitting that ended there): each run's metrics."""
    import shutil

    from bertdemo.pretrain.checkpoints import read_state, run_checkpoints
    from bertdemo.settings import DiskRules

    whole = MetricsBuffer()
    assert run_training(cfg, metrics=whole, run_folder=tmp_path / "whole", disk=DiskRules(keep_checkpoints=4)) == "finished"
    (half,) = [p for p in run_checkpoints(tmp_path / "whole") if read_state(p)["step"] == 4]
    shutil.copytree(half, tmp_path / "part" / "steps" / "step-4")
    resumed = MetricsBuffer()
    assert run_training(cfg.replace(resume_from=str(tmp_path / "part" / "steps" / "step-4")), metrics=resumed,
                        run_folder=tmp_path / "part") == "finished"
    return whole, resumed


def test_a_run_resumed_part_way_trains_on_what_it_would_have_drawn_uninterrupted(tmp_path, corpus):
    """The data order and the masks follow the seed and the step: a run resumed from its step-4 checkpoint
    (as a sitting that ended there) has the uninterrupted run's losses at steps 5-8 and its final weights, so twins
    stopped and resumed at different steps still read the same batches."""
    cfg = tiny_run_config(corpus, tmp_path, steps=8, log_every=1, checkpoint_every=4, time_budget_s=0.0,
                          eval_every=1000)
    whole, resumed = _whole_and_resumed_at_4(cfg, tmp_path)
    losses = {name: dict(zip(m.snapshot().steps, m.snapshot().train_loss)) for name, m in
              (("whole", whole), ("resumed", resumed))}
    assert [losses["resumed"][s] for s in range(5, 9)] == pytest.approx([losses["whole"][s] for s in range(5, 9)],
                                                                      rel=1e-5)
    ends = [load_checkpoint_model(str(latest_checkpoint(tmp_path / run)), False) for run in ("whole", "part")]
    for (name, a), (_, b) in zip(ends[0].state_dict().items(), ends[1].state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)


def test_a_run_resumed_between_its_logs_counts_every_token_it_read(tmp_path, corpus):
    """A sitting saved at step 4 whose last log was step 3: the resumed run's token counts at steps 6 and 8 are the
    uninterrupted run's (step x 4 blocks x 32 tokens), not one step short."""
    from bertdemo.pretrain.checkpoints import read_state

    cfg = tiny_run_config(corpus, tmp_path, steps=8, log_every=3, checkpoint_every=4, time_budget_s=0.0,
                          eval_every=1000, batch_size=4, seq_len=32)
    whole, resumed = _whole_and_resumed_at_4(cfg, tmp_path)
    assert read_state(tmp_path / "part" / "steps" / "step-4")["history"]["steps"][-1] == 3
    counted = dict(zip(resumed.snapshot().steps, resumed.snapshot().tokens))
    assert dict(zip(whole.snapshot().steps, whole.snapshot().tokens)) == {3: 384, 6: 768, 8: 1024}
    assert {step: counted[step] for step in (6, 8)} == {6: 768, 8: 1024}


def test_a_run_ends_when_its_time_budget_is_spent(tmp_path, corpus):
    cfg = tiny_run_config(corpus, tmp_path, steps=100_000, time_budget_s=0.5, eval_every=1000)
    metrics = MetricsBuffer()
    assert run_training(cfg, metrics=metrics, run_folder=tmp_path / "ck") == "finished"
    assert 0 < metrics.snapshot().step < 100_000


def test_lever_settings_are_checked():
    for bad in (dict(locality_bias=-1.0), dict(locality_fade=1.5), dict(adam_beta2=1.0), dict(time_budget_s=-1.0)):
        with pytest.raises(ValueError):
            TrainConfig().replace(**bad).validate()


@pytest.mark.parametrize("name, value", [("locality_hold", 0.4), ("locality_dropout", 0.25), ("mimetic_init", True),
                                         ("output_vocab", 8000), ("batch_size_start", 8)])
def test_the_deleted_levers_are_refused_by_name_and_old_configs_still_load(name, value):
    with pytest.raises(ValueError, match=f"Unknown setting '{name}'"):  # an API caller or the CLI
        TrainConfig.from_flat(**{name: value})
    saved = TrainConfig().to_dict()  # a checkpoint's config, written before the levers were deleted
    saved["model"].update(locality_hold=0.0, locality_dropout=0.0, mimetic_init=False)
    saved["objective"]["output_vocab"] = 0
    saved["optim"].update(batch_size_start=0, batch_ramp=0.5)
    assert TrainConfig.from_dict(saved) == TrainConfig()  # each at its default: it loads
    group = {"locality_hold": "model", "locality_dropout": "model", "mimetic_init": "model", "output_vocab": "objective",
             "batch_size_start": "optim"}[name]
    saved[group][name] = value
    with pytest.raises(ValueError, match=f"trained with {name} = {value!r}"):
        TrainConfig.from_dict(saved)


def test_a_checkpoint_saved_while_the_bias_is_on_says_so(tmp_path, corpus):
    """The default bias fades over the whole run: a checkpoint from its middle is a stock BERT that predicts
    without the bias, and the run's status and the checkpoint's state say so."""
    cfg = tiny_run_config(corpus, tmp_path, steps=24)
    metrics = MetricsBuffer()
    trainer = Trainer(cfg, metrics, tmp_path / "ck", DistInfo(), {}, torch.device("cpu"), RunControl())
    while trainer.step < 12:
        trainer.train_step()
    strength = trainer.locality_strength()
    assert 0.4 < strength < 0.6  # half way through a run whose bias fades over all of it
    trainer.save()
    assert f"saved with the locality bias at {strength:.0%}" in metrics.snapshot().message
    state = json.loads((latest_checkpoint(tmp_path / "ck") / "trainer_state.json").read_text())
    assert state["locality_strength"] == pytest.approx(strength)


def test_the_bias_fades_and_its_strength_is_read_from_the_attention_modules():
    model = _model()
    bias = locality.LocalityBias(model, factor=8.0, fade=0.8)
    assert [bias.strength_at(p) for p in (0.0, 0.4, 0.6, 0.8, 1.0)] == [1.0, 0.5, pytest.approx(0.25), 0.0, 0.0]
    bias.update(progress=0.4)
    assert bias.applied_strength() == 0.5
    for layer in model.bert.encoder.layer:  # what the attention adds is what counts, whatever set it
        layer.attention.self.locality_slopes = torch.tensor(locality.alibi_slopes(4)) * 8.0 * 0.3
    assert bias.applied_strength() == pytest.approx(0.3)
    model.set_attn_implementation("sdpa")  # stock attention ignores the slopes
    assert bias.applied_strength() == 0.0
    assert locality.LocalityBias(model, factor=8.0, fade=0.0).strength_at(1.0) == 1.0  # permanent: never fades


def test_the_status_curves_and_timeline_carry_the_bias_each_evaluation_ran_with(tmp_path):
    """A run whose bias is gone by half its steps: /run_status carries the
    strength at each evaluation, the loss chart draws it, and the timeline says what its fading does."""
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache")
    _, service, _ = run_services(settings)
    run = service.start(tiny_run_config(wiki_corpus_file(tmp_path), tmp_path / "runs", steps=24, eval_every=6,
                                        time_budget_s=0.0, locality_fade=0.5))
    assert run.join(60) and run.status == "finished", run.snapshot().message
    status = service.status()
    assert status["eval_steps"] == [0, 6, 12, 18, 24]
    assert status["locality_strength"] == [1.0, 0.5, 0.0, 0.0, 0.0] and status["locality_plan"] == "fades"
    assert status["attention_start"] == "neighbours"  # the default start: heads on the word before / after

    snap = run.snapshot()
    fig = run_curves.training_curves_spec([run_curves.CurveRun("live", snap)], x_axis="step")
    help_line = [t for t in fig["data"] if t.get("yaxis") == run_curves.HELP_AXIS]
    assert len(help_line) == 1 and help_line[0]["x"] == [0, 6, 12, 18, 24]
    assert help_line[0]["y"] == [1, 0.5, 0, 0, 0]
    assert help_line[0]["name"] == "live: attention help (locality bias) 100% → 0%"
    assert fig["layout"]["yaxis6"]["overlaying"] == "y" and fig["layout"]["yaxis6"]["tickformat"] == ".0%"
    assert "attention help (locality bias) 0%" in run_curves.status_markdown(snap)

    before = run_curves.timeline_markdown(None)  # what the page says before Start
    assert "While it fades, the held-out loss may rise for a while" in before and "stock BERT" in before
    assert "Now the help is fading" not in before
    assert "**Its heads start on the neighbours.**" in before and "**Its heads start on the neighbours.**" in \
        run_curves.timeline_markdown(run.snapshot())
    text = run_curves.timeline_markdown(snap)
    assert "**The help is gone** since step 12: the model is a stock BERT now." in text
    held = RunSnapshot(eval_steps=[0, 6], eval_loss=[10.3, 8.0], locality_strength=[1.0, 1.0], locality_plan="fades")
    assert "Now the help" not in run_curves.timeline_markdown(held)
    fading = RunSnapshot(eval_steps=[0, 6, 12, 18], eval_loss=[10.3, 7.0, 6.4, 6.6],
                         locality_strength=[1.0, 1.0, 0.62, 0.4], locality_plan="fades")
    assert ("**Now the help is fading: 40%** (since step 12). The held-out loss is 0.20 above its lowest since the "
            "help began to fade (6.40): expected while the model learns to look at its neighbours on its own.") in \
        run_curves.timeline_markdown(fading)
    none = RunSnapshot(eval_steps=[0], eval_loss=[10.3], eval_ppl=[29700.0], mlm_acc=[0.0])  # a run without the bias
    assert "attention help" not in run_curves.timeline_markdown(none)
    assert "start on the neighbours" not in run_curves.timeline_markdown(none)  # nor the neighbour start
    assert not [t for t in run_curves.training_curves_spec([run_curves.CurveRun("off", none)])["data"]
                if t.get("yaxis") == run_curves.HELP_AXIS]
