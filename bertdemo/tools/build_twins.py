"""Build the twins that ship in ``bertdemo/assets/twins/`` (train both, then export).

    python -m bertdemo.tools.build_twins

Both twins are trained by the project's own engine (``python -m bertdemo.pretrain``, the loop of the
Pretrain tab) with one recipe — the Pretrain tab's default run (bert-tiny shape, the embedded Wikipedia
summaries, 128-token blocks, batch 8, seed 1337, neighbour initialisation and the fading locality bias),
ended by a number of steps rather than the 5-minute clock so that both take exactly the same batches
in the same order — and only the objective differs:

* ``WORK/mlm``: ``--objective mlm``, a ``BertForMaskedLM`` (BERT: each hidden word from both sides);
* ``WORK/ltr``: ``--objective ltr``, a ``BertLMHeadModel`` with ``is_decoder=True`` (every word from the
  words before it; the causal mask its only difference).

Export: each twin's latest checkpoint as a plain model folder in ``ASSETS/<kind>/`` — ``config.json``,
``model.safetensors`` in fp16 (the decoder tied to the word embeddings, stored once), the uncased tokenizer —
and ``ASSETS/build.json``: the command, each run's steps, training seconds, held-out loss and tokens/s, the
machine and the date. ``--export-only`` exports existing ``WORK`` runs. The model card (``ASSETS/README.md``)
is written by hand from ``build.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from bertdemo import storage
from bertdemo.models.twins import TWIN_KINDS, TWINS_DIR

EXPORT_DTYPE = "float16"


def train(kind: str, out: Path, steps: int, num_threads: int, seed: int) -> int:
    """One twin's run with the engine's CLI (the default recipe, ``steps`` steps, no time budget)."""
    from bertdemo.pretrain.__main__ import main as pretrain_main

    return pretrain_main(["--objective", kind, "--steps", str(steps), "--time-budget-s", "0", "--seed", str(seed),
                          "--num-threads", str(num_threads), "--eval-every", str(max(1, steps // 4)),
                          "--checkpoint-every", "0", "--out", str(out), "--no-progress"])


def export(checkpoint: Path, folder: Path) -> dict:
    """A twin's checkpoint -> a plain model folder (fp16 weights, config, tokenizer); what its run measured."""
    import torch
    from transformers import AutoTokenizer

    from bertdemo.locks import MODEL_INIT_LOCK
    from bertdemo.pretrain.model import load_checkpoint_model

    with MODEL_INIT_LOCK:
        model = load_checkpoint_model(str(checkpoint), nsp=False)
    model.to(getattr(torch, EXPORT_DTYPE))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder), safe_serialization=True)
    AutoTokenizer.from_pretrained(str(checkpoint)).save_pretrained(str(folder))
    for extra in ("generation_config.json",):  # nothing the views read; keeps the folder to what stock loads need
        (folder / extra).unlink(missing_ok=True)
    state = json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))
    history = state.get("history", {})
    return {"class": type(model).__name__, "step": state.get("step"), "training_s": round(state.get("elapsed_s", 0), 1),
            "heldout_loss": (history.get("eval_loss") or [None])[-1], "tokens_per_s": _tokens_per_s(history),
            "megabytes": round((folder / "model.safetensors").stat().st_size / 1e6, 1)}


def _tokens_per_s(history: dict) -> float | None:
    """Tokens seen per second of training over the whole run, from its metric history."""
    tokens, wall = history.get("tokens") or [], history.get("wall_s") or []
    return round(tokens[-1] / wall[-1]) if tokens and wall and wall[-1] > 0 else None


def main(argv: list[str] | None = None) -> int:
    """The command line: train both twins, then export; 0 on success."""
    parser = argparse.ArgumentParser(prog="python -m bertdemo.tools.build_twins", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=600, help="steps of each twin (batch 8 x 128 tokens)")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--num-threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--work", default="runs/twins", help="folder of the two training runs")
    parser.add_argument("--assets", default=str(TWINS_DIR), help="where the twins are exported")
    parser.add_argument("--export-only", action="store_true", help="export the runs already in --work")
    args = parser.parse_args(argv)
    from bertdemo.pretrain.checkpoints import latest_checkpoint

    work, assets = Path(args.work), Path(args.assets)
    wall = {}
    for kind in TWIN_KINDS:
        if not args.export_only:
            started = time.perf_counter()
            code = train(kind, work / kind, args.steps, args.num_threads, args.seed)
            if code != 0:
                return code
            wall[kind] = round(time.perf_counter() - started, 1)
    built = {}
    for kind in TWIN_KINDS:
        checkpoint = latest_checkpoint(work / kind)
        if checkpoint is None:
            print(f"error: no checkpoint in {work / kind}", file=sys.stderr)
            return 2
        built[kind] = {**export(checkpoint, assets / kind), **({"wall_s": wall[kind]} if kind in wall else {})}
        print(f"{kind}: {built[kind]}", file=sys.stderr)
    record = {"command": "python -m bertdemo.tools.build_twins " + " ".join(argv if argv is not None else sys.argv[1:]),
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, training threads: {args.num_threads}, "
                         f"no GPU, load average {os.getloadavg()[0]:.1f} at the end",
              "python": platform.python_version(), "steps": args.steps, "seed": args.seed, "twins": built}
    storage.write_text(assets / "build.json", json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
