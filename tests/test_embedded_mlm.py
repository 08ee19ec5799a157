"""The embedded masked-LM: warm-start and partial freezing in the engine, export of the trained
parameters, assembly into a normal model folder, and the shipped model as the offline default."""

import json

import pytest
import torch
from transformers import AutoModelForMaskedLM, BertForMaskedLM, BertModel

from bertdemo.explore import fill_mask
from bertdemo.models import embedded
from bertdemo.models.hub import HubProbe
from bertdemo.models.policy import AccessPolicy
from bertdemo.models.store import ModelStore, load_masked_lm, offline_default
from bertdemo.pretrain.checkpoints import latest_checkpoint
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.fused_ce import linear_cross_entropy
from bertdemo.pretrain.masking import IGNORE_INDEX
from bertdemo.pretrain.model import apply_freeze, build_model, trainable_names
from bertdemo.tools import build_embedded_mlm
from tests.helpers import tiny_bert_config


@pytest.fixture(scope="module")
def tiny_encoder_dir(tmp_path_factory, tokenizer):
    """A tiny bare BertModel folder (like the embedded encoder: no MLM head) with the tokenizer."""
    torch.manual_seed(1)
    path = tmp_path_factory.mktemp("tiny-encoder")
    BertModel(tiny_bert_config(num_hidden_layers=3)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_warm_start_keeps_the_encoder_and_adds_a_tied_head(tiny_encoder_dir, tokenizer):
    cfg = TrainConfig.from_flat(init_from=str(tiny_encoder_dir))
    cfg.validate()
    assert cfg.model_shape() == (3, 32, 2, 64)
    model = build_model(cfg, tokenizer)
    source = BertModel.from_pretrained(tiny_encoder_dir).state_dict()
    mine = model.bert.state_dict()
    shared = [k for k in source if k in mine and not k.startswith("pooler")]
    assert len(shared) > 20
    for key in shared:
        assert torch.equal(mine[key], source[key]), key
    head = model.cls.predictions
    assert head.decoder.weight is model.bert.embeddings.word_embeddings.weight


def test_train_layers_freezes_embeddings_and_lower_layers(tiny_encoder_dir, tokenizer):
    model = build_model(TrainConfig.from_flat(init_from=str(tiny_encoder_dir), train_layers=1), tokenizer)
    names = trainable_names(model)
    assert names and all(n.startswith(("bert.encoder.layer.2.", "cls.")) for n in names)
    assert any(n.startswith("cls.predictions.transform") for n in names) and "cls.predictions.bias" in names
    assert not model.cls.predictions.decoder.weight.requires_grad  # tied to the frozen embeddings
    head_only = BertForMaskedLM(tiny_bert_config())
    apply_freeze(head_only, 0)
    assert all(n.startswith("cls.") for n in trainable_names(head_only))
    with pytest.raises(ValueError, match="train_layers"):
        TrainConfig.from_flat(init_from=str(tiny_encoder_dir), train_layers=4).validate()
    with pytest.raises(ValueError, match="not a model folder"):
        TrainConfig.from_flat(init_from=str(tiny_encoder_dir / "nope")).validate()


def test_fused_ce_with_a_frozen_decoder_matches_the_plain_loss():
    torch.manual_seed(0)
    h = torch.randn(6, 8, requires_grad=True)
    w, b = torch.randn(50, 8), torch.randn(50, requires_grad=True)  # w frozen
    y = torch.tensor([1, IGNORE_INDEX, 7, 49, 0, IGNORE_INDEX])
    loss = linear_cross_entropy(h, w, b, y, chunk_rows=4)
    loss.backward()
    h2, b2 = h.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    ref = torch.nn.functional.cross_entropy(h2 @ w.t() + b2, y, ignore_index=IGNORE_INDEX)
    ref.backward()
    assert torch.allclose(loss, ref, atol=1e-5)
    assert torch.allclose(h.grad, h2.grad, atol=1e-5) and torch.allclose(b.grad, b2.grad, atol=1e-5)


@pytest.mark.parametrize("train_layers, freeze_embeddings", [(1, False), (-1, False)])
def test_export_then_assemble_round_trip(tiny_encoder_dir, tokenizer, tmp_path, monkeypatch, train_layers,
                                         freeze_embeddings):
    """Top layer only (embeddings then frozen too), and everything trained (embeddings and tied decoder)."""
    monkeypatch.setattr(embedded, "encoder_dir", lambda: tiny_encoder_dir)
    cfg = TrainConfig.from_flat(init_from=str(tiny_encoder_dir), train_layers=train_layers, freeze_embeddings=freeze_embeddings)
    model = build_model(cfg, tokenizer)
    with torch.no_grad():  # "training": change exactly the trainable parameters
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 0.1)
    ckpt = tmp_path / "ckpt"
    model.save_pretrained(ckpt)
    (ckpt / "train_config.json").write_text(json.dumps(cfg.to_dict()), encoding="utf-8")
    assets = build_embedded_mlm.export(ckpt, tmp_path / "assets")
    assert embedded.has_mlm_assets(assets)
    from safetensors.torch import load_file

    trained = load_file(str(assets / embedded.TRAINED_FILE))
    assert set(trained) == set(trainable_names(model))
    assert all(t.dtype == torch.float16 for t in trained.values())

    folder = embedded.mlm_dir(assets, cache_dir=tmp_path / "cache")
    assert folder.name.startswith("embedded-mlm-") and not list(folder.parent.glob(".*tmp*"))
    assert embedded.mlm_dir(assets, cache_dir=tmp_path / "cache") == folder  # reused
    (folder / "model.safetensors").unlink()  # damaged by hand: assembled again
    assert embedded.mlm_dir(assets, cache_dir=tmp_path / "cache") == folder
    rebuilt = AutoModelForMaskedLM.from_pretrained(folder)
    expected = model.state_dict()
    for key, value in rebuilt.state_dict().items():
        assert torch.allclose(value, expected[key], atol=2e-3), key
    assert rebuilt.cls.predictions.decoder.weight.data_ptr() == rebuilt.bert.embeddings.word_embeddings.weight.data_ptr()


def test_build_runs_the_second_everyday_pass_from_stage_two_and_exports_it(tiny_encoder_dir, tmp_path,
                                                                            monkeypatch):
    """``--skip-everyday``: stage 3 continues from WORK/everyday on WORK/everyday.jsonl with the next seed,
    and its checkpoint (not stage 2's) is what gets exported."""
    monkeypatch.setattr(embedded, "encoder_dir", lambda: tiny_encoder_dir)
    work, assets = tmp_path / "work", tmp_path / "assets"
    work.mkdir()
    sentences = ["The cat sat on the mat.", "I drank a cup of tea this morning.", "See you tomorrow."]
    (work / "everyday.jsonl").write_text("".join(json.dumps({"text": s * 4}) + "\n" for s in sentences * 100),
                                         encoding="utf-8")
    tiny = ["--num-threads", "1", "--work", str(work), "--assets", str(assets)]
    from bertdemo.pretrain.__main__ import main as pretrain_main

    assert pretrain_main(["--init-from", str(tiny_encoder_dir), "--corpus", str(work / "everyday.jsonl"),
                          "--no-freeze-embeddings", "--train-layers", "-1", "--steps", "2", "--batch-size", "4",
                          "--seq-len", "32", "--num-threads", "1", "--out", str(work / "everyday"),
                          "--no-progress"]) == 0
    assert build_embedded_mlm.main(["--skip-everyday", "--second-steps", "3", "--second-lr", "1e-4",
                                    "--seed", "5", *tiny]) == 0
    second = latest_checkpoint(work / "everyday2")
    cfg = TrainConfig.from_json(second / "train_config.json")
    assert (cfg.model.init_from, cfg.data.corpus, cfg.optim.steps, cfg.optim.lr, cfg.system.seed) == (
        str(work / "everyday" / "steps" / "step-2"), str(work / "everyday.jsonl"), 3, 1e-4, 6)  # stage 2's latest
    assert json.loads((second / "trainer_state.json").read_text())["step"] == 3
    from safetensors import safe_open

    with safe_open(str(assets / embedded.TRAINED_FILE), "pt") as f:
        assert json.loads(f.metadata()["checkpoint_state"])["step"] == 3  # stage 3's checkpoint, not stage 2's
        exported = f.get_tensor("bert.embeddings.word_embeddings.weight")
    trained = BertForMaskedLM.from_pretrained(second).bert.embeddings.word_embeddings.weight.detach()
    assert torch.allclose(exported.float(), trained, atol=1e-3)


# ---- the model shipped in bertdemo/assets/embedded_mlm ----

@pytest.fixture(scope="module")
def shipped():
    assert embedded.has_mlm_assets(), "bertdemo/assets/embedded_mlm/ must ship trained.safetensors + config.json"
    return load_masked_lm(embedded.EMBEDDED_MLM_NAME, "cpu")


def test_shipped_assets_are_small():
    total = sum(p.stat().st_size for p in embedded.mlm_assets_dir().iterdir() if p.is_file())
    assert total < 50e6
    assert (embedded.mlm_assets_dir() / "README.md").is_file()  # the model card


def test_shipped_model_loads_as_a_standard_folder(shipped):
    model = AutoModelForMaskedLM.from_pretrained(str(embedded.mlm_dir()))
    assert type(model).__name__ == "BertForMaskedLM" and model.config.num_hidden_layers == 6
    assert shipped.has_mlm_head and shipped.source == "embedded" and not shipped.missing_head_keys


@pytest.mark.parametrize("sentence, answer", [
    ("The capital of France is [MASK].", "paris"),
    ("Paris is the capital of [MASK].", "france"),
    ("Thank you very [MASK].", "much"),
    ("He opened the [MASK] and walked into the room.", "door"),
    ("A doctor works in a [MASK].", "hospital"),
    ("The firefighters put out the [MASK].", "fire"),
])
def test_shipped_model_predicts_sensibly(shipped, sentence, answer):
    result = fill_mask.predict(shipped, sentence, top_k=5)
    assert answer in [c.text for c in result.masks[0].candidates]


def test_offline_default_is_the_embedded_mlm(shipped):
    assert offline_default() == embedded.EMBEDDED_MLM_NAME
    store = ModelStore(default="bert-base-uncased", device="cpu", policy=AccessPolicy(hub=HubProbe(offline=True)))
    loaded = store.get()
    assert loaded.name == embedded.EMBEDDED_MLM_NAME and loaded.has_mlm_head
    assert "model hub unreachable: using the embedded model" in loaded.note
    values = [value for _, value in store.choices()]
    assert embedded.EMBEDDED_MLM_NAME in values and embedded.EMBEDDED_ENCODER_NAME in values


def test_offline_default_is_the_bare_encoder_without_the_assets(monkeypatch, tmp_path):
    monkeypatch.setattr(embedded, "MLM_ASSETS_DIR", tmp_path)
    assert offline_default() == embedded.EMBEDDED_ENCODER_NAME
    with pytest.raises(ValueError, match="not available"):
        load_masked_lm(embedded.EMBEDDED_MLM_NAME, "cpu")


def test_offline_default_falls_back_to_the_encoder_when_assembly_fails(monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("read-only cache")

    monkeypatch.setattr(embedded, "mlm_dir", broken)
    offline = AccessPolicy(hub=HubProbe(offline=True))
    loaded = ModelStore(default="bert-base-uncased", device="cpu", policy=offline).get()
    assert loaded.name == embedded.EMBEDDED_ENCODER_NAME and not loaded.has_mlm_head
    assert "model hub unreachable" in loaded.note
