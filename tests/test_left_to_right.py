"""The left-to-right objective: a run trains BertLMHeadModel (is_decoder=True), its checkpoints load in stock
transformers, and every view reads it as the causal model it is — exactly (bit-identical answers when later
words change, attention exactly 0 above the diagonal)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, BertLMHeadModel

from bertdemo.explore import attention, attribution, fill_mask, inside, inside_layer, inside_output, model_outputs, nsp
from bertdemo.models.causal import is_left_to_right, predicting_positions
from bertdemo.models.store import load_masked_lm
from bertdemo.pretrain import TrainConfig
from bertdemo.pretrain.__main__ import build_parser
from bertdemo.pretrain.checkpoints import latest_checkpoint
from bertdemo.pretrain.evaluation import answer_questions
from bertdemo.pretrain.heldout import heldout_questions
from bertdemo.pretrain.locality import LocalityBias
from bertdemo.pretrain.metrics import MetricsBuffer
from bertdemo.pretrain.model import BatchMaker, PretrainObjective, build_model, load_checkpoint_model
from bertdemo.pretrain.trainer import run_training
from tests.helpers import tiny_bert_config, tiny_model_dir, tiny_run_config

SENTENCE = "The [MASK] barked at the mailman all night."
LATER = "The [MASK] barked at a postman every single day."  # the same words before the mask, others after it


@pytest.fixture(scope="module")
def ltr_dir(tmp_path_factory, tokenizer):
    """A tiny BertLMHeadModel (random weights: every attention weight it may give is non-zero) + tokenizer."""
    return tiny_model_dir(BertLMHeadModel, tmp_path_factory.mktemp("tiny-ltr"), tokenizer, is_decoder=True)


@pytest.fixture(scope="module")
def ltr(ltr_dir):
    return load_masked_lm(str(ltr_dir), "cpu")


@pytest.fixture(scope="module")
def ltr_run(tmp_path_factory, corpus):
    """A tiny left-to-right run (20 steps) through the app's training loop: (config, metrics, run folder)."""
    tmp = tmp_path_factory.mktemp("ltr-run")
    cfg = tiny_run_config(corpus, tmp, objective="ltr")
    metrics = MetricsBuffer()
    assert run_training(cfg, metrics=metrics, run_folder=tmp / "run") == "finished"
    return cfg, metrics, tmp / "run"


def test_the_objective_is_a_setting_on_the_cli_and_refused_with_nsp() -> None:
    assert TrainConfig().objective.objective == "mlm"
    assert build_parser().parse_args(["--out", "x", "--objective", "ltr"]).objective == "ltr"
    with pytest.raises(ValueError, match="objective must be one of"):
        TrainConfig.from_flat(objective="gpt").validate()
    with pytest.raises(ValueError, match="left-to-right run has none"):
        TrainConfig.from_flat(objective="ltr", nsp=True).validate()


def test_an_ltr_run_trains_bert_lm_head_model_and_loads_in_stock_transformers(ltr_run, tokenizer) -> None:
    _cfg, metrics, folder = ltr_run
    snap = metrics.snapshot()
    assert snap.eval_loss[-1] < snap.eval_loss[0]  # it learned: held-out next-word loss fell
    assert metrics.get("tokens_per_s") > 0
    checkpoint = latest_checkpoint(folder)
    stock = AutoModelForCausalLM.from_pretrained(str(checkpoint)).eval()
    assert type(stock) is BertLMHeadModel and stock.config.is_decoder
    engine = load_checkpoint_model(str(checkpoint), nsp=False).eval()
    assert type(engine) is BertLMHeadModel
    app = load_masked_lm(str(checkpoint), "cpu")
    assert type(app.model) is BertLMHeadModel and is_left_to_right(app.model)
    ids = tokenizer("the cat sat on the mat", return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        want = stock(ids).logits
        assert torch.equal(engine(ids).logits, want)
        assert torch.allclose(app.model(ids).logits, want, atol=1e-5)  # app: its own attention function


def test_the_ltr_loss_is_stock_next_word_prediction_over_every_token(tokenizer) -> None:
    cfg = TrainConfig.from_flat(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                                intermediate_size=64, objective="ltr", neighbour_init=False)
    torch.manual_seed(0)
    model = build_model(cfg, tokenizer).eval()
    assert type(model) is BertLMHeadModel and model.config.is_decoder
    blocks = torch.randint(1000, 5000, (3, 16))
    batch = BatchMaker(cfg, tokenizer, torch.device("cpu"))(blocks, torch.Generator().manual_seed(1))
    assert batch["positions"] is None and torch.equal(batch["input_ids"], blocks)  # nothing masked
    with torch.inference_mode():
        ours = PretrainObjective(model)(**batch)["loss"]
        stock = model(input_ids=blocks, labels=blocks).loss  # transformers shifts: logits at t predict t + 1
    assert torch.allclose(ours, stock, atol=1e-6)


def test_twins_draw_the_same_batches_in_the_same_order(tokenizer) -> None:
    """A masked-LM run and a left-to-right run of one seed leave the generator in the same state after each
    batch: the next epoch's order (drawn from it) is the same for both."""
    blocks = torch.randint(1000, 5000, (4, 16))
    states = {}
    for objective in ("mlm", "ltr"):
        cfg = TrainConfig.from_flat(objective=objective)
        generator = torch.Generator().manual_seed(7)
        make = BatchMaker(cfg, tokenizer, torch.device("cpu"))
        for _ in range(3):
            make(blocks, generator)
        states[objective] = generator.get_state()
    assert torch.equal(states["mlm"], states["ltr"])


def test_heldout_questions_of_an_ltr_model_are_answered_from_the_words_before(ltr, tokenizer) -> None:
    blocks = np.random.default_rng(0).integers(1000, 5000, (3, 20))
    blocks[:, 0], blocks[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    q = heldout_questions(blocks, tokenizer.all_special_ids, tokenizer.mask_token_id)
    got = answer_questions(ltr.model, q, torch.device("cpu"))
    losses = []
    with torch.inference_mode():
        logits = ltr.model(torch.from_numpy(blocks)).logits  # the true words, no [MASK]
    for row, col in zip(*np.nonzero(q.labels != -100)):
        losses.append(F.cross_entropy(logits[row, col - 1][None], torch.tensor([int(blocks[row, col])])).item())
    assert got["loss"] == pytest.approx(float(np.mean(losses)), abs=1e-5)


def test_a_prediction_is_bit_identical_when_any_later_token_changes(ltr, tokenizer) -> None:
    ids = tokenizer("one two three four five six seven", return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        base = ltr.model(ids).logits[0]
        for j in range(1, ids.shape[1]):
            changed = ids.clone()
            changed[0, j] = 2000 + j
            other = ltr.model(changed).logits[0]
            assert torch.equal(other[:j], base[:j]), j  # positions before j: bit-identical
            assert not torch.equal(other[j], base[j]), j  # the changed one itself does move


def test_fill_mask_answers_from_the_words_before_the_blank_only(ltr, tokenizer) -> None:
    a = fill_mask.predict(ltr, SENTENCE, top_k=5, keep_tensors=True)
    b = fill_mask.predict(ltr, LATER, top_k=5, keep_tensors=True)
    assert torch.equal(a.probs, b.probs)  # every word after the blank changed: the same answer, bit for bit
    assert "words before the blank only" in a.note
    enc = tokenizer(SENTENCE, return_tensors="pt")
    pos = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0])
    with torch.inference_mode():  # the model's own forward: its output at the position before the blank
        want = ltr.model(**enc).logits[0, pos - 1].softmax(-1)
    assert torch.allclose(a.probs[0], want, atol=1e-6)
    assert a.masks[0].candidates[0].id == int(want.argmax())
    with pytest.raises(ValueError, match="left-to-right model: turn whole words off"):
        fill_mask.predict(ltr, SENTENCE, whole_words=True)


def test_attention_of_an_ltr_model_is_exactly_zero_above_the_diagonal(ltr) -> None:
    result = attention.compute(ltr, "the dog barked at the mailman")
    assert result.causal
    upper = np.triu(np.ones(result.attentions.shape[-2:], dtype=bool), 1)
    assert (result.attentions[..., upper] == 0).all()
    assert (result.attentions[..., ~upper] > 0).all()  # a random model attends to every earlier token
    assert np.allclose(result.attentions.sum(-1), 1, atol=1e-5)


def test_inside_bert_recomputes_the_causal_mask_before_the_softmax(ltr) -> None:
    text = "the dog barked at the [MASK] ."
    own = inside.trace(ltr, text)
    for layer_att in own.attentions:
        assert (torch.triu(layer_att[0], 1) == 0).all()
    step = inside_layer.layer_step(ltr, text, layer=1, head=1, query=2)
    assert step.causal
    assert step.max_diff_attention < 1e-5 and step.max_diff_output < 1e-5  # against the model's own forward
    assert (step.mask[3:] <= -1e38).all() and (step.mask[:3] == 0).all()  # the causal mask entered the scores
    assert (step.probs[3:] == 0).all() and step.probs.sum() == pytest.approx(1, abs=1e-6)
    lens = inside_output.logit_lens(ltr, text)
    assert lens.max_abs_diff_logits < 1e-4  # the lens at the last layer = the model's logits for the blank
    loss = inside_output.mlm_loss(ltr, text, "house")
    assert loss.masks[0].neg_log_prob == pytest.approx(loss.model_loss, abs=1e-5)  # stock causal loss agrees
    order = inside.order_test(ltr, "the dog barked at the mailman")
    assert order.causal and order.max_diff_without_positions > 1e-3  # the causal mask alone sees order


def test_views_that_need_a_masked_lm_refuse_an_ltr_model_clearly(ltr) -> None:
    answer = nsp.predict_is_next(ltr, "The dog barked.", "The mailman ran.")
    assert not answer.available and "left-to-right LM" in answer.message
    with pytest.raises(ValueError, match="Attribution needs a masked LM"):
        attribution.attribute(ltr, SENTENCE)
    out = model_outputs.model_outputs(ltr, SENTENCE)
    enc = inside.encode_for_inside(ltr, SENTENCE)
    pos = enc.input_ids.index(ltr.tokenizer.mask_token_id)
    with torch.inference_mode():
        want = ltr.model(**enc.tensors).logits[0, pos - 1].softmax(-1)
    assert out.top_prob == pytest.approx(float(want.max()), abs=1e-6)
    assert predicting_positions(ltr.model, [3, 5]) == [2, 4]
    with pytest.raises(ValueError, match="first token"):
        predicting_positions(ltr.model, [0])


def test_the_locality_bias_keeps_the_causal_mask(tokenizer) -> None:
    torch.manual_seed(0)
    model = BertLMHeadModel(tiny_bert_config(is_decoder=True)).eval()
    bias = LocalityBias(model, factor=8.0, fade=1.0)
    bias.update(0.0)  # full strength: the run's own attention function
    ids = torch.randint(1000, 5000, (1, 12))
    changed = ids.clone()
    changed[0, 8:] = 3000
    with torch.inference_mode():
        assert torch.equal(model(ids).logits[0, :8], model(changed).logits[0, :8])


def test_the_fill_mask_code_reproduces_an_ltr_models_answer(ltr, ltr_dir) -> None:
    import contextlib
    import io

    from bertdemo.snippets import views as code

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.fill_mask_code(str(ltr_dir), SENTENCE, 3), "<snippet>", "exec"), {})  # noqa: S102
    result = fill_mask.predict(ltr, SENTENCE, top_k=3)
    want = [(c.token, round(c.prob, 4)) for c in result.masks[0].candidates]
    assert out.getvalue().strip() == str(want)


def test_a_left_to_right_model_starts_with_heads_on_the_words_before(tokenizer) -> None:
    from bertdemo.pretrain.model import neighbour_offsets

    assert neighbour_offsets(4) == [-1, 1, -2, 2] and neighbour_offsets(4, left_to_right=True) == [-1, -2, -3, -4]
    cfg = TrainConfig.from_flat(preset="custom", num_hidden_layers=1, hidden_size=64, num_attention_heads=2,
                                intermediate_size=64, objective="ltr")
    torch.manual_seed(0)
    model = build_model(cfg, tokenizer).eval()
    model.set_attn_implementation("eager")  # the weights themselves
    ids = torch.randint(1000, 5000, (1, 12))
    with torch.inference_mode():
        att = model(ids, output_attentions=True).attentions[0][0]  # (heads, S, S)
    rows = torch.arange(3, 12)
    assert (att[0, rows].argmax(-1) == rows - 1).all() and (att[1, rows].argmax(-1) == rows - 2).all()


def test_a_controlled_ltr_run_predicts_exactly_the_words_its_masked_twin_masks(tokenizer) -> None:
    """``ltr_targets="masked"``: the left-to-right model reads the true words (nothing replaced by [MASK]) and is
    scored only at the positions a masked-LM run of the same seed masks on that batch, each from the output one
    position before it: the stock next-word loss restricted to those positions."""
    blocks = torch.randint(1000, 5000, (3, 24))
    blocks[:, 0] = tokenizer.cls_token_id
    masked = BatchMaker(TrainConfig.from_flat(objective="mlm"), tokenizer, torch.device("cpu"))(
        blocks, torch.Generator().manual_seed(3))
    cfg = TrainConfig.from_flat(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                                intermediate_size=64, objective="ltr", ltr_targets="masked", neighbour_init=False)
    batch = BatchMaker(cfg, tokenizer, torch.device("cpu"))(blocks, torch.Generator().manual_seed(3))
    assert torch.equal(batch["input_ids"], blocks)  # the true words: the causal mask hides what comes after
    assert torch.equal(batch["positions"], masked["positions"]) and torch.equal(batch["labels"], masked["labels"])
    torch.manual_seed(0)
    model = build_model(cfg, tokenizer).eval()
    with torch.inference_mode():
        ours = PretrainObjective(model)(**batch)["loss"]
        logits = model(input_ids=blocks).logits  # (B, T, V): position t predicts the token at t + 1
    rows = torch.arange(3).unsqueeze(1).expand_as(batch["positions"])
    want = F.cross_entropy(logits[rows, batch["positions"] - 1].reshape(-1, logits.shape[-1]),
                           blocks[rows, batch["positions"]].reshape(-1))
    assert torch.allclose(ours, want, atol=1e-5)
    with pytest.raises(ValueError, match="ltr_targets must be one of"):
        TrainConfig.from_flat(objective="ltr", ltr_targets="half").validate()
    with pytest.raises(ValueError, match="no static masks"):
        TrainConfig.from_flat(objective="ltr", ltr_targets="masked", static_masks=2).validate()


def test_a_run_trains_with_the_tokenizer_it_is_given_and_a_visitor_cannot_set_it(corpus, tmp_path) -> None:
    """``data.tokenizer``: the run's vocabulary (the twins' own 8,192-piece WordPiece); the model has its size and
    the checkpoint carries it. A public server refuses the setting (a server path)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import AutoTokenizer, BertTokenizerFast

    from bertdemo.pretrain.form import config_from_settings
    from bertdemo.settings import Limits

    with open(corpus, encoding="utf-8") as fh:
        texts = list(fh)[:100]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=600, special_tokens=[
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    BertTokenizerFast(tokenizer_object=tok).save_pretrained(str(tmp_path / "tok"))
    cfg = tiny_run_config(corpus, tmp_path, tokenizer=str(tmp_path / "tok"), steps=4, eval_every=2)
    assert run_training(cfg, metrics=MetricsBuffer(), run_folder=tmp_path / "run") == "finished"
    checkpoint = latest_checkpoint(tmp_path / "run")
    size = len(AutoTokenizer.from_pretrained(str(tmp_path / "tok")))
    assert load_checkpoint_model(str(checkpoint), nsp=False).config.vocab_size == size
    assert len(AutoTokenizer.from_pretrained(str(checkpoint))) == size
    with pytest.raises(ValueError, match="tokenizer cannot be set on this public server"):
        config_from_settings({"tokenizer": str(tmp_path / "tok")}, runs_dir=str(tmp_path), public_limits=Limits())
