"""Time to insight: what a pretraining run has learned after 1, 2 and 5 minutes of training.

    python bench/bench_time_to_insight.py                          # the defaults, seed 1337, marks 1,2,5 min
    python bench/bench_time_to_insight.py --seeds 1337,1,2 --json after.json
    python bench/bench_time_to_insight.py --lever before           # the defaults before the levers were adopted
    python bench/bench_time_to_insight.py --lever locality         # one lever alone, on top of "before"
    python bench/bench_time_to_insight.py --set neighbour_init=true --set locality_bias=0   # a setting changed
    python bench/bench_time_to_insight.py --set locality_fade=0.8   # a fade schedule
    python bench/bench_time_to_insight.py --device cuda            # on a GPU, marks 5, 10 and 30 s
    python bench/bench_time_to_insight.py --plot docs/benchmarks/time_to_insight.png before.json after.json
    python bench/bench_time_to_insight.py --measured after.json   # as bertdemo/pretrain/measured.py quotes it

The clock. On CPU the run trains with one thread, as the app's run does on a 2-core machine (all
cores but one, the other left to the web server), and a mark is reached when the *training thread's
CPU time* (``time.thread_time``) reaches it: a proxy for wall time on an idle 2-core machine that
stays honest on a busy, shared one. Evaluations are not counted (they run between steps). On CUDA
the clock is wall time with the device synchronised after every step.

The evaluation (the same for every run, whatever its training recipe): the corpus's held-out
blocks with a fixed 15 % of their tokens replaced by [MASK] (no kept or random tokens, which would
reward copying), scored over the full 30,522-word vocabulary: loss (nats), top-1 / top-5 accuracy
and the median rank of the true token; and the rank of each probe sentence's expected word. The
landmarks are n-gram models counted on the training blocks and scored on the same masked tokens:
word frequency (unigram), the word before (bigram, Witten-Bell interpolated) and both neighbours
(the words either side of the gap, interpolated with the bigram).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertdemo.pretrain.config import TrainConfig, setting_types

# What the Pretrain tab started with before these levers existed, and each lever alone on top of it. The levers that
# lost (locality hold and dropout, mimetic initialisation, a restricted output vocabulary, the batch ramp) were
# deleted from the engine; their runs are in docs/lab/ and commit 0dfb497 still has them.
BEFORE = dict(batch_size=32, steps=2000, locality_bias=0.0, adam_beta2=0.999, time_budget_s=0.0, mlm_probability=0.15, neighbour_init=False)
LEVERS: dict[str, dict] = {
    "before": {},
    "locality": dict(locality_bias=8.0, locality_fade=0.2),  # gone by step 400 of 2000 (~1.8 min at batch 32)
    "locality-permanent": dict(locality_bias=8.0, locality_fade=0.0),
    "neighbour-init": dict(neighbour_init=True),  # heads start on the word before / after; no bias, nothing fades
    "batch8": dict(batch_size=8),
    "beta2": dict(adam_beta2=0.98),
    "time-budget": dict(time_budget_s=120.0),  # LR decays to 0 as 2 minutes of training run out
    "mask40": dict(mlm_probability=0.4, mask_replace_prob=1.0, random_replace_prob=0.0),
}
PROBES = [  # answers that the words either side decide: within reach of a tiny model in minutes
    ("He was born [MASK] London.", "in"),
    ("The United [MASK] of America.", "states"),
    ("It is one of the [MASK] cities in the world.", "largest"),
    ("She was a member [MASK] the band.", "of"),
    ("The film was released [MASK] 2005.", "in"),
    ("The river flows [MASK] the sea.", "into"),
]
PAGE_PROBE = ("The capital of France is [MASK].", "paris")  # the Pretrain tab's own probe: minutes until "paris"
EVAL_SEED = 20_15  # the held-out masks: the same for every run and seed


class HonestEval:
    """Fixed [MASK]-only 15 % held-out masks and the n-gram landmarks on them."""

    def __init__(self, heldout, train, tokenizer, device) -> None:
        import torch

        from bertdemo.pretrain.masking import mask_tokens

        self.tokenizer, self.device = tokenizer, device
        special = torch.tensor(sorted(set(tokenizer.all_special_ids)), device=heldout.device)
        g = torch.Generator(device=heldout.device).manual_seed(EVAL_SEED)
        mb = mask_tokens(heldout, special, mask_token_id=tokenizer.mask_token_id, vocab_size=len(tokenizer),
                         generator=g, mlm_probability=0.15, mask_replace_prob=1.0, random_replace_prob=0.0,
                         fixed_count=True)
        self.input_ids, self.positions = mb.input_ids, mb.positions  # (N, T), (N, k)
        self.labels = heldout.gather(1, mb.positions)  # (N, k)
        self.landmarks = ngram_landmarks(train.cpu().numpy(), heldout.cpu().numpy(), mb.positions.cpu().numpy(),
                                         len(tokenizer))

    def __call__(self, model, bf16: bool) -> dict:
        import torch

        from bertdemo.pretrain.hardware import autocast

        was_training = model.training
        model.eval()
        ranks, losses = [], []
        try:
            with torch.inference_mode(), autocast(self.device, bf16):
                for start in range(0, len(self.input_ids), 32):
                    ids, pos = self.input_ids[start:start + 32], self.positions[start:start + 32]
                    hidden = model.bert(input_ids=ids).last_hidden_state  # (b, T, H)
                    h = hidden.gather(1, pos.unsqueeze(-1).expand(-1, -1, hidden.size(-1)))  # (b, k, H)
                    logits = model.cls.predictions(h).float().flatten(0, 1)  # (b*k, V)
                    y = self.labels[start:start + 32].flatten()
                    true = logits.gather(1, y[:, None])  # (b*k, 1)
                    ranks.append((logits > true).sum(1) + 1)
                    losses.append(torch.logsumexp(logits, 1) - true[:, 0])
        finally:
            model.train(was_training)
        rank, loss = torch.cat(ranks).cpu().numpy(), torch.cat(losses).cpu().numpy()
        return {"loss": round(float(loss.mean()), 3), "top1": round(float((rank == 1).mean()), 4),
                "top5": round(float((rank <= 5).mean()), 4), "median_rank": float(np.median(rank)),
                "probe_ranks": self.probe_ranks(model), "page_probe_rank": self.probe_ranks(model, [PAGE_PROBE])[0]}

    def probe_ranks(self, model, probes: list[tuple[str, str]] = PROBES) -> list[int]:
        """The rank of each probe's expected word at its [MASK] (1 = the model's first guess)."""
        import torch

        out = []
        was_training = model.training
        model.eval()
        try:
            with torch.inference_mode():
                for text, word in probes:
                    enc = self.tokenizer(text, return_tensors="pt").to(self.device)
                    at = int((enc["input_ids"][0] == self.tokenizer.mask_token_id).nonzero()[0])
                    logits = model(**enc).logits[0, at].float()
                    target = self.tokenizer.convert_tokens_to_ids(word)
                    out.append(int((logits > logits[target]).sum()) + 1)
        finally:
            model.train(was_training)
        return out


def _counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.unique(keys, return_counts=True)


def _lookup(table: tuple[np.ndarray, np.ndarray], keys: np.ndarray) -> np.ndarray:
    """Counts of ``keys`` in a (sorted unique keys, counts) table; 0 where absent."""
    uniq, counts = table
    i = np.clip(np.searchsorted(uniq, keys), 0, len(uniq) - 1)
    return np.where(uniq[i] == keys, counts[i], 0)


def ngram_landmarks(train: np.ndarray, heldout: np.ndarray, positions: np.ndarray, vocab: int) -> dict[str, float]:
    """Held-out loss (nats) at the masked ``positions`` of n-gram models counted on ``train`` blocks."""
    V = np.int64(vocab)
    l, w, r = (train[:, :-2].ravel().astype(np.int64), train[:, 1:-1].ravel().astype(np.int64),
               train[:, 2:].ravel().astype(np.int64))
    uni = np.bincount(train.ravel(), minlength=vocab).astype(np.float64)
    p1_all = (uni + 1) / (uni.sum() + vocab)  # add-one word frequency
    pairs = _counts(l * V + w)
    left_totals = np.bincount(l, minlength=vocab)
    left_types = np.bincount(pairs[0] // V, minlength=vocab)
    triples = _counts((l * V + w) * V + r)
    gap = _counts(l * V + r)  # c(l, ., r)
    gap_types = _counts(triples[0] // (V * V) * V + triples[0] % V)  # distinct words seen between l and r
    rows = np.arange(len(heldout))[:, None]
    y = heldout[rows, positions].astype(np.int64).ravel()
    yl = heldout[rows, positions - 1].astype(np.int64).ravel()
    yr = heldout[rows, np.minimum(positions + 1, heldout.shape[1] - 1)].astype(np.int64).ravel()
    p1 = p1_all[y]
    n_l, t_l = left_totals[yl], left_types[yl]
    p2 = (_lookup(pairs, yl * V + y) + t_l * p1) / np.maximum(n_l + t_l, 1)
    p2 = np.where(n_l > 0, p2, p1)
    n_g = _lookup(gap, yl * V + yr)
    t_g = _lookup(gap_types, yl * V + yr)
    p3 = (_lookup(triples, (yl * V + y) * V + yr) + t_g * p2) / np.maximum(n_g + t_g, 1)
    p3 = np.where(n_g > 0, p3, p2)
    return {"uniform": round(float(np.log(vocab)), 3), "unigram": round(float(-np.log(p1).mean()), 3),
            "left": round(float(-np.log(p2).mean()), 3), "both": round(float(-np.log(p3).mean()), 3)}


def settings_for(lever: str, overrides: dict) -> dict:
    """The run's settings: the defaults, or "before" plus one lever, then ``--set`` overrides."""
    if lever == "defaults":
        return dict(overrides)
    unknown = set(BEFORE) - set(setting_types())
    if unknown:
        raise SystemExit(f"this checkout lacks the settings {sorted(unknown)}")
    return {**BEFORE, **LEVERS[lever], **overrides}


def run_once(settings: dict, seed: int, marks: list[float], eval_every: float, device_name: str) -> dict:
    """Train one run to the last mark; evaluate every ``eval_every`` training seconds and at each mark."""
    import torch

    from bertdemo.pretrain.metrics import MetricsBuffer
    from bertdemo.pretrain.trainer import DistInfo, Trainer, training_device
    from bertdemo.runs.control import RunControl

    cfg = TrainConfig().replace(seed=seed, device=device_name, num_threads=1, **settings)
    cfg.validate()
    device = training_device(cfg, DistInfo())
    cuda = device.type == "cuda"
    torch.set_num_threads(1)
    clock = time.perf_counter if cuda else time.thread_time
    trainer = Trainer(cfg, MetricsBuffer(probe_text=cfg.monitor.probe_text), None, DistInfo(), {}, device,
                      RunControl())
    if hasattr(trainer, "clock"):
        trainer.clock = clock  # the run's own time budget (if any) counts the same seconds as the marks
    evaluator = HonestEval(trainer.heldout, trainer.train_blocks, trainer.tokenizer, device)
    points = sorted({*marks, *np.arange(eval_every, marks[-1], eval_every).round(3).tolist(), 0.0})
    trained, curve = 0.0, []
    for point in points:
        while trained < point and trainer.step < cfg.optim.steps:
            t = clock()
            trainer.train_step()
            if cuda:
                torch.cuda.synchronize()
            trained += clock() - t
        result = {"t": round(trained, 2), "step": trainer.step, "tokens": trainer.tokens_seen,
                  "mark": point in marks, **evaluator(trainer.model, trainer.bf16), **page_view(trainer)}
        if hasattr(trainer, "locality_strength"):
            result["locality"] = round(trainer.locality_strength(), 3)
        curve.append(result)
        print(f"  seed {seed} t={trained:7.1f}s step {trainer.step:5d} loss {result['loss']:.3f} "
              f"top5 {result['top5']:.3f} median rank {result['median_rank']:.0f} probes {result['probe_ranks']} "
              f"{PAGE_PROBE[1]} rank {result['page_probe_rank']} page loss {result['page_loss']:.3f} "
              f"(landmarks {result['page_landmarks']}) top-5 {result['page_probe_top5']}",
              flush=True)
    return {"seed": seed, "landmarks": evaluator.landmarks, "curve": curve}


def page_view(trainer) -> dict:
    """What the Pretrain tab shows at this step: the run's own evaluation (its held-out questions, its landmark
    lines) and the rank of the page's probe word, as the trainer reports them to the page."""
    trainer.evaluate()
    snap = trainer.metrics.snapshot()
    own = [t for t in snap.probe_tracks if (t["text"], t["expected"]) == PAGE_PROBE]
    return {"page_loss": round(snap.eval_loss[-1], 3), "page_landmarks": snap.landmarks,
            "page_probe_top5": [token for token, _ in own[0]["top5"]] if own else []}


def summary(runs: list[dict], marks: list[float], unit: float) -> list[str]:
    """Markdown rows: median over seeds (min-max) at each mark."""
    lines = ["| at | seeds | step | loss | top-1 | top-5 | median rank | probe words in top 5 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]

    def cell(values: list[float], fmt: str) -> str:
        mid = statistics.median(values)
        if len(values) == 1:
            return format(mid, fmt)
        return f"{format(mid, fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"

    for mark in marks:
        rows = [[c for c in run["curve"] if c["mark"]][marks.index(mark)] for run in runs]
        hits = [sum(r <= 5 for r in c["probe_ranks"]) for c in rows]
        lines.append(f"| {mark / unit:g} | {len(rows)} | {cell([c['step'] for c in rows], '.0f')} "
                     f"| {cell([c['loss'] for c in rows], '.2f')} | {cell([100 * c['top1'] for c in rows], '.1f')} % "
                     f"| {cell([100 * c['top5'] for c in rows], '.1f')} % "
                     f"| {cell([c['median_rank'] for c in rows], '.0f')} | {cell(hits, '.0f')} of {len(PROBES)} |")
    return lines


def plot(png: str, json_files: list[str]) -> None:
    """Held-out [MASK]-only loss against training minutes, one line per result file, landmarks dotted."""
    import plotly.graph_objects as go

    from bench.plot import save_png

    fig = go.Figure()
    landmarks = {}
    for name in json_files:
        data = json.loads(Path(name).read_text(encoding="utf-8"))
        run = data["runs"][0]
        landmarks = run["landmarks"]
        fig.add_scatter(x=[c["t"] / data["unit"] for c in run["curve"]], y=[c["loss"] for c in run["curve"]],
                        mode="lines+markers", name=f"{data['label']} (seed {run['seed']})")
    for key, text in (("unigram", "word frequency"), ("left", "uses the word before"),
                      ("both", "uses both neighbours")):
        if key in landmarks:
            fig.add_hline(y=landmarks[key], line_dash="dot", annotation_text=f"{text} ({landmarks[key]:.2f})",
                          annotation_position="top right")
    unit_name = "minutes" if data["unit"] == 60 else "seconds"
    fig.update_layout(title=f"Held-out [MASK]-only loss ({data['clock']})", xaxis_title=f"training {unit_name}",
                      yaxis_title="loss (nats)", yaxis_range=[3.5, 8.5])
    save_png(fig, png)


def measured_run(json_file: str) -> str:
    """A saved run (--json) as the ``MeasuredRun`` literal bertdemo/pretrain/measured.py quotes: the page's own
    held-out loss against its landmark lines, and the page probe word's rank, in training minutes."""
    data = json.loads(Path(json_file).read_text(encoding="utf-8"))
    curve = data["runs"][0]["curve"]
    last = curve[-1]

    def first(test) -> float | None:
        return next((round(c["t"] / 60, 1) for c in curve if test(c)), None)

    best = min(curve, key=lambda c: c["page_probe_rank"])
    budget = data["settings"].get("time_budget_s", TrainConfig().optim.time_budget_s) / 60
    return (f"MeasuredRun(budget_min={budget:g}, steps={last['step']}, minutes={last['t'] / 60:.1f}, "
            f"tokens={last['tokens']}, "
            f"below_left_min={first(lambda c: c['page_loss'] < c['page_landmarks']['left'])}, "
            f"below_both_min={first(lambda c: c['page_loss'] < c['page_landmarks']['both'])}, "
            f"final_loss={last['page_loss']:.2f}, best_rank={best['page_probe_rank']}, "
            f"best_rank_min={best['t'] / 60:.1f}, final_rank={last['page_probe_rank']}, "
            f"top5_min={first(lambda c: c['page_probe_rank'] <= 5)})")


def parse_setting(text: str) -> tuple[str, object]:
    name, _, value = text.partition("=")
    kind = setting_types().get(name)
    if kind is None:
        raise SystemExit(f"unknown setting {name!r}")
    return name, (value.lower() in ("1", "true", "yes")) if kind is bool else kind(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lever", default="defaults", choices=["defaults", *LEVERS],
                        help="defaults: TrainConfig() as it is; otherwise the 'before' defaults plus this lever")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a setting")
    parser.add_argument("--seeds", default="1337", help="comma-separated seeds")
    parser.add_argument("--device", default="cpu", help="cpu (thread CPU-time marks) or cuda (wall-time marks)")
    parser.add_argument("--marks", default="", help="marks in minutes (cpu, default 1,2,5) or seconds (cuda, 5,10,30)")
    parser.add_argument("--eval-every", type=float, default=0.0, help="extra curve points every so many seconds")
    parser.add_argument("--label", default="")
    parser.add_argument("--json", default="", help="write every curve and the summary here")
    parser.add_argument("--plot", nargs="+", metavar=("PNG", "JSON"), help="draw saved --json results, no run")
    parser.add_argument("--measured", metavar="JSON", help="a saved --json run as bertdemo/pretrain/measured.py quotes it")
    args = parser.parse_args()
    if args.measured:
        print(measured_run(args.measured))
        return
    if args.plot:
        plot(args.plot[0], args.plot[1:])
        return
    cuda = args.device.startswith("cuda")
    unit = 1.0 if cuda else 60.0
    marks = [float(m) * unit for m in (args.marks or ("5,10,30" if cuda else "1,2,5")).split(",")]
    settings = settings_for(args.lever, dict(parse_setting(s) for s in args.set))
    label = args.label or args.lever
    clock = "wall seconds on the GPU" if cuda else "training-thread CPU time, 1 thread (the app's share of 2 cores)"
    print(f"{label}: {settings} marks {marks} s of {clock}", flush=True)
    runs = [run_once(settings, int(seed), marks, args.eval_every or (2.0 if cuda else 20.0), args.device)
            for seed in args.seeds.split(",")]
    lines = summary(runs, marks, unit)
    print(f"\n{label} — landmarks {runs[0]['landmarks']}\n" + "\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps({"label": label, "settings": settings, "clock": clock, "unit": unit,
                                               "marks": marks, "runs": runs, "summary": lines}, indent=1),
                                   encoding="utf-8")


if __name__ == "__main__":
    main()
