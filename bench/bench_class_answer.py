"""One class answer's own cost on a public server that keeps many runs: the disk budget's check on every write.

    python bench/bench_class_answer.py [--runs 100] [--answers 200]

A runs folder of ``--runs`` runs of six checkpoints of eight files each (the server's default of kept checkpoints),
a 10 GB budget over it, and one member recording ``--answers`` answers (``ClassStore.record_answer``, SQLite in the
runs folder), timed one by one, with the budget checked three ways, alternately (A B C C B A): a fresh walk of the
folders at every write (``DiskRules.check``, as before ``bertdemo/disk_meter.py``), the meter the app uses
(``DiskMeter``: one walk per second, what it allowed since on top), and no budget (the write alone).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def runs_folder(root: Path, runs: int) -> Path:
    """``runs`` runs of six checkpoints of eight small files each under ``root/runs``."""
    folder = root / "runs"
    for r in range(runs):
        for s in range(6):
            step = folder / f"run{r}" / "steps" / f"step-{s}"
            step.mkdir(parents=True)
            for f in range(8):
                (step / f"f{f}").write_bytes(b"x" * 100)
    return folder


def answer_times(runs: Path, check, answers: int, label: str) -> list[float]:
    """Milliseconds of each of ``answers`` answers of one new member of a new class."""
    from bertdemo.classroom.service import Classroom

    classroom = Classroom("", runs, disk_check=check)
    new = classroom.store.create_class(f"Bench {label}")
    member = classroom.store.join(new.join_code, "ada")
    times = []
    for i in range(answers):
        began = time.perf_counter()
        classroom.store.record_answer(member.token, "tokens", f"q{i}", "a", "a", True)
        times.append((time.perf_counter() - began) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--answers", type=int, default=200)
    args = parser.parse_args()

    from bertdemo.disk_meter import DiskMeter
    from bertdemo.settings import DiskRules

    with tempfile.TemporaryDirectory(prefix="bench-class-answer-") as root:
        runs = runs_folder(Path(root), args.runs)
        disk = DiskRules(budget_bytes=10 * 10**9, roots=(runs,))
        ways = {"a walk at every write": lambda: lambda adding: disk.check(adding=adding),  # each: a new check
                "the meter (one walk a second)": lambda: DiskMeter(disk).check, "no budget": lambda: None}
        times: dict[str, list[float]] = {name: [] for name in ways}
        for n, name in enumerate([*ways, *reversed(ways)]):
            times[name] += answer_times(runs, ways[name](), args.answers, str(n))
        for name, ms in times.items():
            q = statistics.quantiles(ms, n=20)
            print(f"{name}: median {statistics.median(ms):.2f} ms, p5 {q[0]:.2f}, p95 {q[-1]:.2f}, n={len(ms)}")


if __name__ == "__main__":
    main()
