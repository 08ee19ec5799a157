"""How true the Train both estimate is: the page's estimate for a pair of ``--steps`` steps (the default form
otherwise: bert-tiny on the embedded Wikipedia summaries) on a fresh server, the pair trained, the wall time of each
twin and of the pair, then the estimate again from what the pair measured.

    python bench/bench_twin_estimate.py [--steps 250]

Each twin's line is printed as it starts; the machine is used by the pair alone (two threads).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=250)
    args = parser.parse_args()

    from bertdemo.context import AppContext
    from bertdemo.pretrain.service import TRAIN_BOTH
    from bertdemo.settings import ServerSettings

    work = Path(tempfile.mkdtemp(prefix="bench-twin-estimate-"))
    settings = ServerSettings.build(runs_dir=work / "runs", cache_dir=work / "cache", offline=True)
    service = AppContext.from_settings(settings).pretrain_runs  # the run services as the app builds them
    form = {"steps": args.steps, TRAIN_BOTH: True}
    print("load", [round(x, 1) for x in os.getloadavg()])
    print("estimate on a fresh server:", service.time_estimate(dict(form)), flush=True)
    began = time.monotonic()
    run = service.start(dict(form))
    seen = None
    while run.active:
        snap = run.snapshot()
        if snap.run_id != seen:
            print(f"{time.monotonic() - began:6.1f} s: twin {snap.run_id} starts", flush=True)
            seen = snap.run_id
        time.sleep(0.5)
    print(f"the pair took {time.monotonic() - began:.1f} s ({run.status})")
    print("estimate after the pair:", service.time_estimate(dict(form)))
    print("load", [round(x, 1) for x in os.getloadavg()])


if __name__ == "__main__":
    main()
