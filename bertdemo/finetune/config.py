"""A fine-tuning run's settings: where the weights start, the recipe, the budget. Plain values, torch-free.

The three starting points are compared fairly: the same seed (classifier head, data order, dropout), the
same data, the same budget. ``init`` names the start: ``embedded`` (the app's embedded masked-LM, a
pretrained 6-layer BERT), ``random`` (random weights of the embedded model's shape), a pretraining run's
checkpoint (``run:<id>/checkpoint``, resolved by the run service to its folder before the run starts), or random
weights of that run's shape (``random:run:<id>/checkpoint``: the control of a start from the run, which says what
its pretraining bought).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

EMBEDDED = "embedded"
RANDOM = "random"
RANDOM_LIKE = "random:"  # + "run:<id>/checkpoint": random weights of that run's shape (its config, its tokenizer)
LEARNING_RATES = (5e-5, 3e-5, 2e-5)  # the BERT paper's fine-tuning grid (Devlin et al. 2019, appendix A.3)
BATCH_SIZES = (16, 32)  # ... and its batch sizes; 2-4 epochs
MAX_SEQ_LEN = 64  # pieces per example (the summaries' first sentences: median 27 pieces, 95th percentile 58)
TASKS = ("topic", "names")  # a summary's first sentence -> its topic; every word of a sentence -> NAME or O


def run_of_init(init: str) -> str:
    """The run reference a start reads its folder from ("run:<id>/…" for a run's weights and for random weights of
    its shape); "" for the embedded model and its random control."""
    run = init.removeprefix(RANDOM_LIKE)
    return run if run.startswith("run:") else ""


def is_random_start(init: str) -> bool:
    """Whether the start is random weights (of the embedded model's shape, or of a run's)."""
    return init == RANDOM or (init.startswith(RANDOM_LIKE) and bool(run_of_init(init)))


def random_like(run_reference: str) -> str:
    """The control of a start from ``run_reference`` ("run:<id>/checkpoint"): random weights of its shape."""
    return RANDOM_LIKE + run_reference


@dataclass(frozen=True)
class FinetuneConfig:
    """One fine-tuning run (every field a plain value, so the form, the API and the CLI share it)."""

    init: str = EMBEDDED  # embedded | random | run:<id>/checkpoint | random:run:<id>/checkpoint
    task: str = "topic"  # one of TASKS: "names" fine-tunes a BertForTokenClassification (bertdemo.finetune.token_engine)
    init_path: str = ""  # the checkpoint folder of a run:<id> init (set by the run service, never by a visitor)
    learning_rate: float = 2e-4  # peak, after warm-up; measured best within the default budget (docs/performance.md)
    batch_size: int = 32
    epochs: float = 3.0  # passes over the training split (the notes: 2-4); the time budget may end it first
    warmup_fraction: float = 0.06  # linear warm-up, then linear decay to 0 at the planned end
    weight_decay: float = 0.01
    max_seq_len: int = 48  # pieces per example, [CLS] and [SEP] included
    time_budget_s: float = 180.0  # training-time budget (0 = none): evaluations count in it, paused time does not
    eval_every: int = 40  # steps between validation evaluations (and one at step 0 and at the end)
    eval_examples: int = 500  # the evaluations during the run score this fixed sample of the validation split;
    # the final one scores all of it (and the test split), unless the run was stopped
    seed: int = 0  # the classifier head's initialisation, the data order, dropout
    probe_text: str = "The violin is a string instrument played with a bow."  # its topic probabilities tracked
    device: str = "cpu"  # cpu | cuda | auto
    num_threads: int = 0  # torch threads on the CPU (0: torch's default)

    def validate(self) -> FinetuneConfig:
        """ValueError naming the value refused; returns self for chaining."""
        if not (self.init in (EMBEDDED, RANDOM) or run_of_init(self.init)):
            raise ValueError(f"init {self.init[:80]!r} is not one of 'embedded', 'random', 'run:<id>/checkpoint' "
                             "or 'random:run:<id>/checkpoint'.")
        if self.task not in TASKS:
            raise ValueError(f"task {self.task[:40]!r} is not one of {', '.join(map(repr, TASKS))}.")
        if not 1e-6 <= self.learning_rate <= 1e-2:
            raise ValueError(f"learning_rate {self.learning_rate:g} is outside 1e-6 … 1e-2.")
        if not 1 <= self.batch_size <= 128:
            raise ValueError(f"batch_size {self.batch_size} is outside 1 … 128.")
        if not 0.05 <= self.epochs <= 20:
            raise ValueError(f"epochs {self.epochs:g} is outside 0.05 … 20.")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction {self.warmup_fraction:g} is outside 0 … <1.")
        if not 0 <= self.weight_decay <= 1:
            raise ValueError(f"weight_decay {self.weight_decay:g} is outside 0 … 1.")
        if not 8 <= self.max_seq_len <= MAX_SEQ_LEN:
            raise ValueError(f"max_seq_len {self.max_seq_len} is outside 8 … {MAX_SEQ_LEN}.")
        if not 0 <= self.time_budget_s <= 3600:
            raise ValueError(f"time_budget_s {self.time_budget_s:g} is outside 0 … 3600 seconds.")
        if not 5 <= self.eval_every <= 10_000:
            raise ValueError(f"eval_every {self.eval_every} is outside 5 … 10,000 steps.")
        if not 50 <= self.eval_examples <= 5000:
            raise ValueError(f"eval_examples {self.eval_examples} is outside 50 … 5,000.")
        if not 0 <= self.seed < 2**31:
            raise ValueError(f"seed {self.seed} is outside 0 … 2^31-1.")
        if self.device not in ("cpu", "cuda", "auto"):
            raise ValueError(f"device {self.device!r} is not one of cpu, cuda, auto.")
        if not 0 <= self.num_threads <= 256:
            raise ValueError(f"num_threads {self.num_threads} is outside 0 … 256.")
        if len(self.probe_text) > 500:
            raise ValueError(f"probe_text has {len(self.probe_text)} characters; at most 500.")
        return self

    def replace(self, **changes: Any) -> FinetuneConfig:
        return dataclasses.replace(self, **changes)

    def flat(self) -> dict[str, Any]:
        """The settings as a plain dict (saved beside a checkpoint; the run's label and CSV read it)."""
        return dataclasses.asdict(self)


FORM_FIELDS = ("init", "task", "learning_rate", "batch_size", "epochs", "time_budget_s", "seed", "probe_text")
SERVER_ONLY = ("init_path", "device", "num_threads")  # a visitor never sets these


def config_from_request(request: dict[str, Any]) -> FinetuneConfig:
    """A config from the form's or an API caller's settings dict (unknown or server-only names refused,
    values converted to the field's type); ValueError naming what is wrong."""
    if not isinstance(request, dict):
        raise ValueError("The fine-tuning settings are a JSON object, e.g. {\"init\": \"embedded\"}.")
    unknown = sorted(set(request) - set(FORM_FIELDS) - {"eval_every", "max_seq_len", "warmup_fraction", "weight_decay"})
    if unknown:
        raise ValueError(f"Unknown fine-tuning setting(s): {', '.join(map(repr, unknown[:5]))[:200]}; "
                         f"known: {', '.join(FORM_FIELDS)}, eval_every, max_seq_len, warmup_fraction, weight_decay.")
    defaults = FinetuneConfig()
    values: dict[str, Any] = {}
    for name, value in request.items():
        kind = type(getattr(defaults, name))
        if value is None:
            continue
        try:
            if kind is int:
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError
                values[name] = int(value)
            elif kind is float:
                values[name] = float(value)
            else:
                if not isinstance(value, str):
                    raise ValueError
                values[name] = value
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{name} must be a {kind.__name__}; got {str(value)[:40]!r}.") from None
    return FinetuneConfig(**values).validate()
