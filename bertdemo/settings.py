"""The server's settings: one frozen object, built from the command line by ``app.py`` (or by a test).

Everything a server decides once at start lives here — public-mode rules, the training caps, where
runs and caches go, how much disk they may take, offline or not, the admin token — and is passed
down as an argument. No module keeps a copy of its own. Torch-free (the page is built before torch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bertdemo import storage
from bertdemo.memory import DEFAULT_BUDGET_GB
from bertdemo.models.batching import DEFAULT_SHARED_BATCH
from bertdemo.models.catalog import DEFAULT_MODEL
from bertdemo.traffic import TrafficRules

ADMIN_ENV = "BERTDEMO_ADMIN_TOKEN"  # holders of this token may stop (and delete) any run on a public server
DEFAULT_MAX_MODEL_GB = 1.5
DEFAULT_PUBLIC_DISK_GB = 10.0


SERVED_PREFIX = "served:"


def served_name(folder: str | Path) -> str:
    """How a public server names the operator's own model folder (``--model``): ``served:<folder name>``."""
    return SERVED_PREFIX + Path(folder).expanduser().name


def _is_folder(name: str) -> bool:
    try:
        return Path(name).expanduser().is_dir()
    except (OSError, ValueError):
        return False


CAP_ROOM_S = 15.0  # a run's cap holds its start and end, its time budget does not: the room left for them ...
CAP_ROOM_SHARE = 0.10  # ... and a share of the cap for a final evaluation that grows with the run (the whole splits)


@dataclass(frozen=True)
class Limits:
    """Caps on a public server's runs."""

    max_params: int = 12_000_000
    max_steps: int = 5000
    max_tokens_per_step: int = 8192  # block length × batch size
    max_minutes: float = 20.0  # wall time; the run is stopped (and saved) when it is reached
    max_eval_batches: int = 20  # held-out batches per evaluation (each costs a training step's forward)
    # what one address holds, every browser and class membership behind it together (bertdemo/runs/service.py)
    max_runs_per_visitor: int = 3  # runs one address keeps on the server (saved or not); delete one to start more
    queued_per_address: int = 1  # starts one address has waiting for the training slot at once
    class_places: int = 0  # runs (waiting or kept) a class's members hold beyond their addresses' (app.py --class-places)
    keep_hours: float = 24.0  # an ended run untouched this long is deleted when someone starts a run

    @property
    def max_seconds(self) -> float:
        return self.max_minutes * 60.0

    @property
    def training_budget_s(self) -> float:
        """The most a fine-tuning run's time budget may be under the cap: the cap less room for what the budget does
        not hold but the cap does — loading the start, the final evaluation, keeping and saving the model
        (:data:`CAP_ROOM_S` + :data:`CAP_ROOM_SHARE` of the cap; never under half the cap)."""
        return max(self.max_seconds / 2, self.max_seconds - CAP_ROOM_S - CAP_ROOM_SHARE * self.max_seconds)


@dataclass(frozen=True)
class PublicRules:
    """What a visitor may do on a public server (``--share``, ``--public``, a Space)."""

    max_model_gb: float = DEFAULT_MAX_MODEL_GB  # largest hub checkpoint (safetensors) downloaded
    allowed: frozenset[str] = frozenset()  # model names the operator chose (e.g. --model), loaded as on localhost
    served: tuple[tuple[str, str], ...] = ()  # ("served:<name>", folder): the operator's local --model, shown by name
    limits: Limits = field(default_factory=Limits)  # caps on every run a visitor starts


@dataclass(frozen=True)
class DiskRules:
    """How much of the disk runs and caches may take: checkpoints kept per run, and a byte cap on folders."""

    keep_checkpoints: int = 2  # the latest and keep-1 earlier ones
    budget_bytes: int | None = None  # runs + uploads + token cache together; None: no cap
    roots: tuple[Path, ...] = ()  # the folders the budget covers
    keep_milestones: int = 4  # and log-spaced early saves: the first at or after 1x, 2x, 4x, 8x the first step

    def __post_init__(self) -> None:
        if int(self.keep_checkpoints) < 1:
            raise ValueError(f"keep at least 1 checkpoint per run, got {self.keep_checkpoints}.")
        if int(self.keep_milestones) < 0:
            raise ValueError(f"keep 0 or more log-spaced checkpoints per run, got {self.keep_milestones}.")

    @property
    def kept_per_run(self) -> int:
        """The most checkpoints one run keeps on disk: the latest ones and the log-spaced milestones (a run
        continued past its schedule's end keeps one more: :func:`bertdemo.pretrain.budget.kept_saves`)."""
        return max(1, self.keep_checkpoints) + max(0, self.keep_milestones)

    def check(self, adding: int = 0, freeing: int = 0) -> None:
        """ValueError when the budgeted folders plus ``adding`` minus ``freeing`` bytes exceed the cap."""
        if self.budget_bytes is None:
            return
        self.refuse_if_over(storage.folder_bytes(*self.roots), adding, freeing)

    def refuse_if_over(self, used: int, adding: int = 0, freeing: int = 0) -> None:
        """ValueError when ``used`` bytes of the budgeted folders plus ``adding`` minus ``freeing`` exceed the cap."""
        if self.budget_bytes is not None and used + adding - freeing > self.budget_bytes:
            raise ValueError(
                f"This server keeps at most {storage.size_text(self.budget_bytes)} of runs and caches, and "
                f"{storage.size_text(used)} are used; this needs {storage.size_text(max(adding - freeing, 0))} "
                "more. Delete earlier runs (Runs on this server) or choose a smaller model.")


@dataclass(frozen=True)
class ServerSettings:
    """One server's configuration; ``public`` is None at localhost (full power)."""

    default_model: str = DEFAULT_MODEL  # the model every tab starts with
    device: str = "auto"  # auto | cpu | cuda | mps
    offline: bool = False  # never contact the model hub
    runs_dir: Path = Path("runs")  # pretraining runs: checkpoints, metrics, adopted uploads
    cache_dir: Path = field(default_factory=lambda: storage.cache_root() / "blocks")  # packed token blocks
    disk: DiskRules = field(default_factory=DiskRules)
    public: PublicRules | None = None
    admin_token: str = ""  # may stop any run and delete any ended run; "" = nobody (app.py: $BERTDEMO_ADMIN_TOKEN)
    max_upload_bytes: int = 20 * 2**20
    traffic: TrafficRules = field(default_factory=TrafficRules)  # request body caps, upload budgets
    # Fill-Mask requests that arrive together share one forward, up to this many (app.py: $BERTDEMO_FILL_MASK_BATCH)
    fill_mask_batch: int = DEFAULT_SHARED_BATCH
    # what every in-memory cache together may hold (models, answers, activations, features): app.py --memory-budget-gb
    memory_budget_gb: float = DEFAULT_BUDGET_GB
    # where classes are kept: "" = SQLite in runs_dir, or a postgresql:// URL shared by replicas (app.py --class-db)
    class_db: str = ""
    # runs that train at once in the run slot, one per visitor (app.py --parallel-runs; 1: one at a time)
    parallel_runs: int = 1

    @property
    def is_public(self) -> bool:
        return self.public is not None

    @property
    def public_limits(self) -> Limits | None:
        """The training caps of a public server; None at localhost (uncapped)."""
        return self.public.limits if self.public is not None else None

    def is_admin(self, token: str | None) -> bool:
        """True when ``token`` is this server's admin token (never when none is set)."""
        import hmac

        if not self.admin_token or not isinstance(token, str) or not token:
            return False
        return hmac.compare_digest(token.encode("utf-8", "surrogatepass"), self.admin_token.encode("utf-8", "surrogatepass"))

    @classmethod
    def build(cls, *, runs_dir: str | Path = "runs", public: bool = False, keep_checkpoints: int = 2,
              keep_milestones: int = 4, disk_budget_gb: float | None = None, max_model_gb: float = DEFAULT_MAX_MODEL_GB,
              limits: Limits | None = None, allowed: tuple[str, ...] = (), cache_dir: str | Path | None = None,
              admin_token: str | None = None, upload_dir: str | Path | None = None, trusted_proxies: int = 0,
              shares: dict[str, int] | None = None, **rest) -> ServerSettings:
        """Settings from plain values (the command line's, or a test's); the disk budget defaults to
        10 GB in public mode and no cap locally, and counts ``upload_dir`` (the web server's upload folder)
        too; ``admin_token`` None is none (app.py reads ``$BERTDEMO_ADMIN_TOKEN``); ``trusted_proxies``: see
        :func:`bertdemo.traffic.visitor_address`; ``shares``: a visitor's share of the queue and of page
        sessions (:class:`bertdemo.traffic.TrafficRules` fields)."""
        runs = Path(runs_dir)
        cache = Path(cache_dir) if cache_dir is not None else storage.cache_root() / "blocks"
        budget_gb = disk_budget_gb if disk_budget_gb is not None else (DEFAULT_PUBLIC_DISK_GB if public else None)
        disk = DiskRules(keep_checkpoints=int(keep_checkpoints), keep_milestones=int(keep_milestones),
                         budget_bytes=None if budget_gb is None else int(budget_gb * 1e9),
                         roots=(runs, cache) + ((Path(upload_dir),) if upload_dir is not None else ()))
        served = tuple((served_name(a), a) for a in allowed if a and _is_folder(a)) if public else ()
        folders = {folder for _, folder in served}  # loaded by their served: name only, like any other path
        rules = PublicRules(float(max_model_gb), frozenset(a for a in allowed if a and a not in folders),
                            limits=limits or Limits(), served=served) if public else None
        if rest.get("default_model") in folders:
            rest["default_model"] = served_name(rest["default_model"])  # the page names it, never its folder
        token = admin_token or ""
        upload = int(rest.get("max_upload_bytes", cls.max_upload_bytes))
        rest.setdefault("traffic", TrafficRules.for_server(public, upload, trusted_proxies, **(shares or {})))
        return cls(runs_dir=runs, cache_dir=cache, disk=disk, public=rules, admin_token=token, **rest)
