"""Headless pretraining: ``python -m bertdemo.pretrain --preset bert-tiny --corpus wiki --steps 2000 --out DIR``.

Runs the same loop as the app with a progress bar and saves its checkpoints as the app's runs do:
``DIR/steps/step-<n>/`` (each loadable with ``AutoModelForMaskedLM.from_pretrained`` — with
``AutoModelForCausalLM.from_pretrained`` for ``--objective ltr`` — with its ``metrics.csv``), ``DIR/LATEST`` naming the latest; the last line printed gives its folder. Under
``torchrun --nproc_per_node=N`` it trains data-parallel (DDP; gloo on CPU, nccl on CUDA):
each rank trains on its own shard with its own generator seed, rank 0 logs and saves.
Ctrl-C stops after the current step and still writes the checkpoint. ``--auto-resume`` continues
from the latest checkpoint already in DIR, if any: the same command then serves a first start and
every restart (``torchrun --max-restarts``); DIR must then be one folder that every rank can read.
``--init-from`` and ``--resume-from`` take a checkpoint folder, or a run folder (another run's DIR)
for its latest checkpoint.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from bertdemo.pretrain.config import CUSTOM, GROUPS, PRESETS, TrainConfig, leaf_fields, setting_help, setting_types


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bertdemo.pretrain", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter, allow_abbrev=False)
    parser.add_argument("--out", required=True,
                        help="run folder: checkpoints in steps/step-<n>/ (with metrics.csv), LATEST names the latest")
    sections = {group: parser.add_argument_group(f"{group} settings", (cls.__doc__ or "").strip())
                for group, cls in GROUPS.items()}
    types, helps = setting_types(), setting_help()
    for group, f in leaf_fields():
        if f.name in ("runs_dir",):
            continue
        flag = "--" + f.name.replace("_", "-")
        meaning = helps[f.name].replace("%", "%%")  # argparse formats help with %; the formatter adds the default
        if types[f.name] is bool:
            sections[group].add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default, help=meaning)
        else:
            kwargs = {"choices": [*PRESETS, CUSTOM]} if f.name == "preset" else {}
            sections[group].add_argument(flag, type=types[f.name], default=f.default, help=meaning, **kwargs)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--keep-milestones", type=int, default=None,
                        help="log-spaced checkpoints kept besides the latest two (the first save at or after 1x, 2x, "
                             "4x… the first saved step); default: the app's rule")
    parser.add_argument("--auto-resume", action="store_true",
                        help="continue from the checkpoint in --out when there is one (restarts under torchrun)")
    return parser


def _dist_from_env():
    from bertdemo.pretrain.trainer import DistInfo

    world = int(os.environ.get("WORLD_SIZE", "1"))
    return DistInfo(int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0")))


def _check_ranks_agree(resuming: bool, device: str) -> None:
    """Every rank must find the checkpoint in --out, or none: ValueError naming how many did."""
    import torch

    found = torch.tensor([float(resuming)], device=device)  # on the GPU under NCCL
    torch.distributed.all_reduce(found)
    world = torch.distributed.get_world_size()
    if 0 < found.item() < world:
        raise ValueError(f"--auto-resume: {int(found.item())} of {world} ranks see a checkpoint in --out; "
                         "put --out on a folder every node shares (or copy the checkpoint to every node).")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    values = {f.name: getattr(args, f.name) for _, f in leaf_fields() if hasattr(args, f.name)}
    out = Path(args.out)
    from bertdemo.pretrain.checkpoints import latest_checkpoint

    for name in ("init_from", "resume_from"):  # a run folder (another --out) stands for its latest checkpoint
        named = values.get(name)
        if named and not (Path(named) / "config.json").is_file() and latest_checkpoint(named) is not None:
            values[name] = str(latest_checkpoint(named))
    latest = latest_checkpoint(out) if args.auto_resume and not values.get("resume_from") else None
    resuming = latest is not None
    if resuming:
        values["resume_from"] = str(latest)
    cfg = TrainConfig.from_flat(**values, runs_dir=str(out.parent))
    cfg.validate()
    dist = _dist_from_env()
    if cfg.system.num_threads <= 0:  # headless: no UI to leave a core for; split the cores between ranks
        cfg.system.num_threads = max(1, (os.cpu_count() or 1) // dist.world_size)

    if cfg.data.corpus == "tinystories":  # datasets would retry an unreachable hub for half a minute
        from bertdemo.models.hub import HubProbe

        if not HubProbe().reachable():
            print("error: the dataset hub is unreachable, so TinyStories cannot be loaded; use --corpus wiki "
                  "or a .txt / .jsonl file.", file=sys.stderr)
            return 2

    import torch
    from tqdm.auto import tqdm

    from bertdemo.pretrain.budget import check_memory

    if cfg.system.device == "cpu" or not torch.cuda.is_available():  # refuse what this machine cannot hold
        try:
            check_memory(cfg, processes=int(os.environ.get("LOCAL_WORLD_SIZE", dist.world_size)))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2

    from bertdemo.pretrain.metrics import MetricsBuffer
    from bertdemo.pretrain.trainer import run_training
    from bertdemo.runs.control import RunControl
    from bertdemo.settings import DiskRules

    if dist.world_size > 1:
        cuda = cfg.system.device.startswith("cuda") or (cfg.system.device == "auto" and torch.cuda.is_available())
        torch.distributed.init_process_group(backend="nccl" if cuda else "gloo")
        if args.auto_resume:
            _check_ranks_agree(resuming, f"cuda:{dist.local_rank}" if cuda else "cpu")
    metrics = MetricsBuffer(run_id=out.name, total_steps=cfg.optim.steps, preset=cfg.model.preset, corpus=cfg.data.corpus,
                            objective=cfg.objective.objective,
                            probe_text=cfg.monitor.probe_text,
                            probe_expected=cfg.monitor.probe_expected)
    bar = None
    if dist.is_main and not args.no_progress:
        label = "warm-start" if cfg.model.init_from else cfg.model.preset
        bar = tqdm(total=cfg.optim.steps, desc=f"pretrain {label}", unit="step", dynamic_ncols=True)

    def on_step(step: int) -> None:
        if bar is None:
            return
        bar.n = step
        if step % cfg.monitor.log_every == 0:
            snap = metrics.snapshot()
            post = {"loss": f"{snap.train_loss[-1]:.3f}" if snap.train_loss else "-",
                    "tok/s": f"{snap.tokens_per_s:,.0f}"}
            if snap.eval_loss:
                post["eval"] = f"{snap.eval_loss[-1]:.3f}"
            bar.set_postfix(post, refresh=False)
        bar.refresh()

    control = RunControl()

    def on_sigint(signum, frame) -> None:  # first Ctrl-C: stop after this step and save; second: abort
        if control.stop_event.is_set():
            raise KeyboardInterrupt
        control.stop_event.set()

    previous_handler = signal.signal(signal.SIGINT, on_sigint)
    try:
        disk = None if args.keep_milestones is None else DiskRules(keep_milestones=args.keep_milestones)
        status = run_training(cfg, metrics=metrics, run_folder=out, dist=dist, on_step=on_step, disk=disk,
                              control=control, run_info={"run_id": out.name}, raise_on_failure=True)
    finally:
        signal.signal(signal.SIGINT, previous_handler)
        if bar is not None:
            bar.close()
        if dist.world_size > 1 and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
    if dist.is_main:
        snap = metrics.snapshot()
        ev = f", held-out loss {snap.eval_loss[-1]:.3f} (ppl {snap.eval_ppl[-1]:.1f})" if snap.eval_loss else ""
        print(f"{status}: step {snap.step}/{cfg.optim.steps} on {snap.device}{ev}, "
              f"{snap.tokens_per_s:,.0f} tokens/s; checkpoint: {latest_checkpoint(out) or 'none saved'}",
              file=sys.stderr)
    return 0 if status in ("finished", "stopped") else 1


if __name__ == "__main__":
    sys.exit(main())
