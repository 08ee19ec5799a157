"""BERT Explorer command line: parse flags, build the Gradio app, launch it.

Works unchanged as a Hugging Face Space entry point (the Space runs ``python app.py``).
Importing this module does no work: everything happens in :func:`main`.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="BERT Explorer: see BERT work in your browser.")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="address to serve on (0.0.0.0 to reach it from other machines)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", 7860)))
    parser.add_argument("--share", action="store_true", help="also serve through a public Gradio link")
    parser.add_argument("--model", default=None,
                        help="default model: hub id or local folder (default: bert-base-uncased)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"])
    parser.add_argument("--offline", action="store_true",
                        help="never contact the model hub; use local folders and the embedded model")
    parser.add_argument("--runs-dir", default=os.environ.get("BERTDEMO_RUNS_DIR", "runs"),
                        help="where pretraining runs write their checkpoints (default: ./runs)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if os.environ.get("SPACE_ID"):  # on a Hugging Face Space, listen on every interface
        args.host = "0.0.0.0"

    from transformers.utils import logging as hf_logging

    from bertdemo.models import hub
    from bertdemo.models.store import DEFAULT_MODEL, ModelStore
    from bertdemo.ui import build_app
    from bertdemo.ui.layout import CSS, THEME

    hf_logging.set_verbosity_error()
    if args.offline:
        hub.set_offline(True)
    store = ModelStore(default=args.model or DEFAULT_MODEL, device=args.device)
    # Warm the default model in the background so the first request is quick; the page
    # shows loading progress if someone arrives before it is ready.
    threading.Thread(target=_preload, args=(store,), daemon=True).start()
    demo = build_app(store, runs_dir=args.runs_dir)
    demo.queue(default_concurrency_limit=4).launch(
        server_name=args.host, server_port=args.port, share=args.share, theme=THEME, css=CSS,
    )


def _preload(store) -> None:
    try:
        store.get()
    except ValueError as exc:
        logging.getLogger("bertdemo").warning("Default model not loaded: %s", exc)


if __name__ == "__main__":
    main()
