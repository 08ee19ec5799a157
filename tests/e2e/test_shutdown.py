"""A server told to stop (SIGTERM: a Space restarting, ``kill``) saves the live run's checkpoint first."""

from __future__ import annotations

import signal

from gradio_client import Client

from tests.e2e.conftest import launch_app, stop_app
from tests.helpers import wait_until

RUN = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
           corpus="wiki", seq_len=32, batch_size=8, steps=100_000, lr=2e-3, warmup_steps=5, eval_every=100_000,
           checkpoint_every=0, seed=1)  # never saves on its own


def test_sigterm_saves_the_live_run_before_the_server_exits(app_model_dir, tmp_path):
    runs = tmp_path / "runs"
    url, proc = launch_app(["--offline", "--model", app_model_dir, "--runs-dir", str(runs)])
    try:
        client = Client(url, verbose=False)
        client.predict(RUN, "", api_name="/start_run")
        snaps = [{}]

        def trained_three_steps() -> bool:
            snaps[0] = client.predict(api_name="/run_status")
            assert snaps[0]["status"] not in {"failed", "stopped"}, snaps[0]
            return snaps[0]["step"] >= 3

        wait_until(trained_three_steps, timeout=120, interval=0.3, message=lambda: str(snaps[0]))
        assert not list(runs.glob("*/steps/step-*"))  # nothing saved yet
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        saved = list(runs.glob("*/steps/step-*/config.json"))
        assert len(saved) == 1 and (saved[0].parent / "trainer_state.json").is_file()
    finally:
        stop_app(proc)
