"""BERT Explorer command line: parse flags, build the Gradio app, launch it.

Works unchanged as a Hugging Face Space entry point (the Space runs ``python app.py``).
Importing this module does no work: everything happens in :func:`main`.
"""

from __future__ import annotations

import argparse
import logging
import os

SHUTDOWN_SAVE_S = 30.0  # how long a shutdown waits for the live run to save


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from bertdemo.traffic import TrafficRules  # standard library only

    parser = argparse.ArgumentParser(description="BERT Explorer: see BERT work in your browser.")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="address to serve on (0.0.0.0 to reach it from other machines)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    parser.add_argument("--share", action="store_true", help="also serve through a public Gradio link")
    parser.add_argument("--mcp", action="store_true", default=os.environ.get("BERTDEMO_MCP", "") == "1",
                        help="also serve the read-only exact views as MCP tools at /gradio_api/mcp/ "
                             "(bertdemo/ui/mcp_tools.py; BERTDEMO_MCP=1 does the same)")
    parser.add_argument("--model", default=None,
                        help="default model: hub id or local folder (default: bert-base-uncased)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"])
    parser.add_argument("--offline", action="store_true",
                        help="never contact the model hub; use local folders and the embedded model")
    parser.add_argument("--runs-dir", default=os.environ.get("BERTDEMO_RUNS_DIR", "runs"),
                        help="where pretraining runs write their checkpoints (default: ./runs)")
    parser.add_argument("--keep-checkpoints", type=int, default=2, help="checkpoints kept per run (the latest first)")
    parser.add_argument("--keep-milestones", type=int, default=4,
                        help="and log-spaced early checkpoints kept per run (first save, 2x, 4x, 8x its step)")
    parser.add_argument("--memory-budget-gb", type=float, default=None,
                        help="memory every cache together may hold: models, answers, activations, features "
                             "(default 3 GB; the process needs about 1 GB more of its own)")
    parser.add_argument("--disk-budget-gb", type=float, default=None,
                        help="most disk for runs, uploads and token caches (default: 10 in public mode, no cap locally)")
    parser.add_argument("--parallel-runs", type=int, default=None, metavar="N",
                        help="runs that train at once, one per visitor (default: 1 on a CPU; on a GPU one per 4 GiB "
                             "of free GPU memory, at most 4); a start beyond them waits in the fair queue")
    parser.add_argument("--class-db", default=os.environ.get("BERTDEMO_CLASS_DB", ""), metavar="URL",
                        help="where classes are kept: a postgresql:// URL for several replicas "
                             "(default: SQLite in the runs folder)")
    public = parser.add_argument_group("public mode (on with --share, --public or on a Hugging Face Space)")
    public.add_argument("--public", action="store_true",
                        help="restrict models, uploads and training for visitors (also implied by --share and SPACE_ID)")
    public.add_argument("--max-model-gb", type=float, default=1.5, help="largest hub checkpoint loaded (public mode)")
    public.add_argument("--max-params", type=int, default=12_000_000, help="largest model trained (public mode)")
    public.add_argument("--max-steps", type=int, default=5000, help="most steps per run (public mode)")
    public.add_argument("--max-tokens-per-step", type=int, default=8192,
                        help="most block length x batch size (public mode)")
    public.add_argument("--max-train-minutes", type=float, default=20.0, help="wall time per run (public mode)")
    public.add_argument("--class-places", type=int, default=0, metavar="N",
                        help="runs (waiting for the training slot or kept) the members of each class a teacher made "
                             "may hold beyond their addresses' shares (public mode; default 0: a class's members "
                             "share their network address's 1 waiting start and 3 kept runs, like every visitor "
                             "behind it). One address keeps at most 5 classes open: at most 5 x N more runs")
    traffic = parser.add_argument_group("traffic (every mode)")
    traffic.add_argument("--max-upload-mb", type=float, default=20.0, help="largest uploaded file")
    traffic.add_argument("--concurrency", type=int, default=4, help="requests computed at once per event (Attention and Inside BERT: in all)")
    traffic.add_argument("--max-queue", type=int, default=64, help="requests waiting at most; later ones are turned away")
    traffic.add_argument("--queue-per-visitor", type=int, default=None,
                         help="requests one visitor may have waiting or running at once (0: no limit; default 16 "
                              "in public mode, else 0); visitors behind one address (a classroom's NAT) share it, "
                              "but a class member who joined counts as themselves")
    traffic.add_argument("--queue-per-address", type=int, default=None,
                         help="requests every visitor behind one address (class members each counted) may have "
                              "waiting or running together (0: no limit; default 48 in public mode, else 0)")
    traffic.add_argument("--max-sessions", type=int, default=TrafficRules.max_sessions,
                         help="page sessions whose state is kept (about 1.25 MB each; the oldest is dropped)")
    traffic.add_argument("--auth", action="append", default=[], metavar="USER:PASS",
                         help="require this login (repeatable)")
    traffic.add_argument("--trusted-proxies", type=int, default=None, metavar="N",
                         help="reverse proxies in front of this server that append the address they received from "
                              "to X-Forwarded-For; a visitor is the N-th entry from the right (default: 1 on a "
                              "Space and with --share, whose tunnel appends it; else 0, the connecting address)")
    args = parser.parse_args(argv)
    if args.keep_checkpoints < 1:
        parser.error("--keep-checkpoints must be at least 1")
    if args.keep_milestones < 0:
        parser.error("--keep-milestones must be 0 or more")
    if args.memory_budget_gb is not None and not args.memory_budget_gb > 0:
        parser.error("--memory-budget-gb must be positive")
    if args.trusted_proxies is not None and not 0 <= args.trusted_proxies <= 8:
        parser.error("--trusted-proxies must be between 0 and 8")
    if args.class_places < 0:
        parser.error("--class-places must be 0 or more")
    if (args.queue_per_visitor or 0) < 0 or (args.queue_per_address or 0) < 0 or args.max_sessions < 1:
        parser.error("--queue-per-visitor and --queue-per-address must be 0 or more and --max-sessions at least 1")
    for pair in args.auth:
        if ":" not in pair or not pair.split(":", 1)[0]:
            parser.error(f"--auth takes user:password, got {pair.split(':', 1)[0]!r}…")
    return args


def is_public(args: argparse.Namespace) -> bool:
    """Public mode: --public, --share, or running on a Hugging Face Space. Off by default at localhost."""
    return bool(args.public or args.share or os.environ.get("SPACE_ID"))


def trusted_proxies(args: argparse.Namespace) -> int:
    """Proxies that append the visitor's address to X-Forwarded-For: as given, else one on a Space (its
    proxy) and with --share (the tunnel), else none (the connecting address is the visitor)."""
    if args.trusted_proxies is not None:
        return args.trusted_proxies
    return 1 if (args.share or os.environ.get("SPACE_ID")) else 0


def settings_from_args(args: argparse.Namespace):
    """The server's settings (:class:`bertdemo.settings.ServerSettings`) from the command line."""
    from bertdemo import compat
    from bertdemo.models.batching import DEFAULT_SHARED_BATCH
    from bertdemo.models.catalog import DEFAULT_MODEL
    from bertdemo.settings import ADMIN_ENV, Limits, ServerSettings

    public = is_public(args)
    limits = Limits(max_params=args.max_params, max_steps=args.max_steps,
                    max_tokens_per_step=args.max_tokens_per_step, max_minutes=args.max_train_minutes,
                    class_places=args.class_places)
    return ServerSettings.build(
        runs_dir=args.runs_dir, public=public, keep_checkpoints=args.keep_checkpoints, keep_milestones=args.keep_milestones,
        disk_budget_gb=args.disk_budget_gb, max_model_gb=args.max_model_gb, limits=limits,
        allowed=(args.model,),  # the operator's --model loads as on localhost
        default_model=args.model or DEFAULT_MODEL, device=args.device, offline=args.offline,
        max_upload_bytes=int(args.max_upload_mb * 1024 * 1024), upload_dir=compat.upload_folder(),
        trusted_proxies=trusted_proxies(args), admin_token=os.environ.get(ADMIN_ENV, ""),
        class_db=args.class_db, parallel_runs=max(1, args.parallel_runs or 1),  # auto: set once torch is in (_preload)
        fill_mask_batch=max(1, int(os.environ.get("BERTDEMO_FILL_MASK_BATCH", DEFAULT_SHARED_BATCH))),
        **({} if args.memory_budget_gb is None else {"memory_budget_gb": args.memory_budget_gb}),
        shares={"max_sessions": args.max_sessions} | (
            {} if args.queue_per_visitor is None else {"queue_per_visitor": args.queue_per_visitor}) | (
            {} if args.queue_per_address is None else {"queue_per_address": args.queue_per_address}),
    )


def configure_environment(args: argparse.Namespace) -> None:
    """What the Hugging Face libraries and gradio read once, when first imported: set before that.

    ``--offline`` sets ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE``/``HF_DATASETS_OFFLINE`` (and no
    gradio analytics); uvicorn trusts no forwarding header (``FORWARDED_ALLOW_IPS``, see the code); transformers logs errors only unless ``TRANSFORMERS_VERBOSITY`` says otherwise.
    gradio's import skips the stub rewriting it does for its own developers (``bertdemo/gradio_import.py``).
    """
    from bertdemo.gradio_import import skip_stub_rewrites
    from bertdemo.models.hub import OFFLINE_ENV  # standard library only

    # Who a visitor is follows --trusted-proxies only (bertdemo/traffic.py). uvicorn, as gradio starts it,
    # would otherwise replace a loopback peer's address with its X-Forwarded-For before the door reads it,
    # so any client of a same-host forwarder (ssh -L, socat) could pose as many visitors.
    os.environ["FORWARDED_ALLOW_IPS"] = ""
    if args.offline:
        os.environ.update(OFFLINE_ENV)
        os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    # gradio rebuilds a pandas table of its last 10,000 events after every event, for a monitoring dashboard this
    # app does not enable: a page open's dozen events paid for it each time. Rebuilt every 1,000 events instead.
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")
    skip_stub_rewrites()


def main(argv: list[str] | None = None) -> None:
    """Serve the page first; PyTorch, transformers and the default model load right after, in the background."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    configure_environment(args)  # before `spaces`, which imports gradio
    from bertdemo.models.device import zero_gpu  # standard library only

    if zero_gpu():  # ZeroGPU Space: `spaces` must load before torch touches CUDA
        try:
            import spaces  # noqa: F401
        except ImportError:
            pass
    if os.environ.get("SPACE_ID"):  # on a Hugging Face Space, listen on every interface
        args.host = "0.0.0.0"

    from starlette.middleware import Middleware

    from bertdemo import compat
    from bertdemo.asset_cache import AssetCache
    from bertdemo.context import AppContext
    from bertdemo.frontend_patch import FrontendPatch, patched_scripts
    from bertdemo.long_links import LongLinks
    from bertdemo.page_cache import PageCache
    from bertdemo.traffic import RequestLimits
    from bertdemo.ui import build_app
    from bertdemo.ui.layout import CSS, HEAD, THEME
    from bertdemo.ui.plotly_figure import file_aliases, plotly_js
    from bertdemo.ui.queue_polling import poll_less
    from bertdemo.ui.session_configs import make_session_configs_lazy
    from bertdemo.ui.skipped_outputs import pass_skipped_outputs
    from bertdemo.ui.visitor_shares import share_per_visitor

    ctx = AppContext.from_settings(settings_from_args(args))  # no torch yet
    left = ctx.runs.clean_leftovers()  # runs that never saved, interrupted checkpoint writes
    if left:
        logging.getLogger("bertdemo").info("Removed %d run folder(s) that never saved a checkpoint", len(left))
    waiting = ctx.runs.restore_queue()  # the runs that waited for the slot when the server stopped
    if waiting:
        logging.getLogger("bertdemo").info("%d run(s) wait for the training slot again, as before the restart", waiting)
    demo = build_app(ctx)
    auth = [tuple(pair.split(":", 1)) for pair in args.auth] or None
    door = Middleware(RequestLimits, rules=ctx.settings.traffic,  # body caps, upload budgets, who the visitor is
                      members=ctx.classes.visitor_key)  # a class member is counted as themselves
    page = Middleware(PageCache, enabled=auth is None)  # the page's bytes made once in ten minutes, not at every open
    # the page's script, style and font files (and plotly.js) read and compressed once, not at every open
    assets = Middleware(AssetCache, enabled=auth is None, files=[str(plotly_js())])
    fixes = Middleware(FrontendPatch, scripts=patched_scripts(compat.frontend_assets()))  # the page's status pass
    links = Middleware(LongLinks)  # a link too long for the page's own requests: its long values dropped, named
    demo.queue(default_concurrency_limit=args.concurrency, max_size=args.max_queue)
    share_per_visitor(demo, ctx.settings.traffic)  # each visitor's events in the queue, sessions in memory
    poll_less(demo)  # the queue looks for work every 5 ms when it has none, not every 1 ms
    pass_skipped_outputs(demo)  # an output an answer leaves as it is costs the server nothing
    demo.launch(
        server_name=args.host, server_port=args.port, share=args.share, theme=THEME, css=CSS, head=HEAD,
        max_file_size=ctx.settings.max_upload_bytes, auth=auth, prevent_thread_lock=True,
        app_kwargs={"middleware": [file_aliases(), links, assets, fixes, page, door]}, state_session_capacity=ctx.settings.traffic.max_sessions,
        mcp_server=bool(args.mcp),  # explicit: gradio's GRADIO_MCP_SERVER would offer every endpoint
        # no "run history" in the browser: gradio's page would parse and rewrite up to 100 past answers in
        # localStorage at every message of every public event (about 45 ms of page CPU a click, growing as a
        # learner's visit goes on; docs/benchmarks.md); a learner's progress is kept by the Learn tab itself
        run_history=False,
    )
    make_session_configs_lazy(demo)  # a page session copies the page's configuration only when it is read
    if args.mcp:  # the read-only views alone, under their endpoint's name
        from bertdemo.ui.mcp_tools import offer_read_only_views

        try:
            offer_read_only_views(demo)
        except RuntimeError:
            demo.close()  # never serve every endpoint as a tool
            raise
    # The page is served: now torch, transformers and the logic, then the default model, so the
    # first request is quick; a request that comes sooner waits, the status line saying so.
    ctx.loader.start(warm_up=lambda: _preload(ctx, auto_parallel_runs=args.parallel_runs is None))
    ctx.trimmer.start()  # memory freed after heavy requests goes back to the system, not kept at the high-water
    _save_runs_on_shutdown(ctx)
    demo.block_thread()


def _save_runs_on_shutdown(ctx) -> None:
    """SIGTERM (a Space restarting, ``kill``) and SIGINT stop the live run of any kind, in any state
    (training, paused, evaluating, saving), which saves its checkpoint (within SHUTDOWN_SAVE_S) before the
    process ends with code 0; a run that cannot end by then is left, and the process exits with code 1."""
    import signal

    def stop_and_exit(signum, frame) -> None:
        log = logging.getLogger("bertdemo")
        log.info("Shutting down: saving the live run, if any")
        if ctx.runs.shutdown(timeout=SHUTDOWN_SAVE_S):
            raise SystemExit(0)
        # A run thread still inside torch: tearing the interpreter down under it aborts the process
        # ("terminate called without an active exception"), so leave at once, saying what was lost.
        log.warning("The live run did not save within %.0f s; exiting without its last checkpoint", SHUTDOWN_SAVE_S)
        logging.shutdown()
        os._exit(1)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop_and_exit)


def _preload(ctx, auto_parallel_runs: bool = False) -> None:
    if auto_parallel_runs:  # how many runs this machine trains at once: known once torch can see its GPU
        from bertdemo.models.device import default_parallel_runs

        try:
            ctx.runs.set_parallel_runs(default_parallel_runs(ctx.settings.device))
        except Exception:  # a GPU that cannot be asked leaves one run at a time
            logging.getLogger("bertdemo").exception("Could not size the run slot; one run at a time")
    try:
        ctx.warm_up()
    except ValueError as exc:
        logging.getLogger("bertdemo").warning("Default model not loaded: %s", exc)
    from bertdemo.gc_pauses import freeze_long_lived

    frozen = freeze_long_lived()  # full collections walk what comes later only: 5 ms, not half a second
    logging.getLogger("bertdemo").info("%d long-lived objects left out of full garbage collections", frozen)


if __name__ == "__main__":
    main()
