"""What a run cost, beside what BERT-base cost: tokens seen and training FLOPs, the arithmetic shown.

Training compute is counted as ``6 · N · D`` (Kaplan et al. 2020): ``N`` parameters, ``D`` tokens read;
a forward costs about 2 FLOPs per parameter per token (a multiply and an add) and its backward about
twice that. It leaves out attention's length-squared term and counts every parameter, the embeddings
too, as BERT's "110M" does, so both sides of the comparison are counted alike.

BERT-base (Devlin et al. 2019, §3.1 and appendix A.2): 110M parameters, 1,000,000 steps of 256
sequences, 128 tokens long for the first 90 % of the steps and 512 for the last 10 %, on 4 Cloud TPUs
(16 chips) for 4 days. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

BERT_BASE_PARAMS = 110_000_000
BERT_BASE_STEPS = 1_000_000
BERT_BASE_BATCH = 256
BERT_BASE_PHASES = ((0.9, 128), (0.1, 512))  # (share of the steps, sequence length)
BERT_BASE_HARDWARE = "4 Cloud TPUs (16 TPU chips) for 4 days"
FLOPS_PER_PARAM_TOKEN = 6  # forward 2 + backward 4


@dataclass(frozen=True)
class TrainingCost:
    """Tokens read and training FLOPs of one model, with the lines of arithmetic that give them."""

    label: str
    params: int
    tokens: int
    steps: int
    tokens_lines: list[str]  # how the tokens were counted

    @property
    def flops(self) -> float:
        return float(FLOPS_PER_PARAM_TOKEN) * self.params * self.tokens

    @property
    def flops_line(self) -> str:
        return (f"{FLOPS_PER_PARAM_TOKEN} × {self.params:,} parameters × {self.tokens:,} tokens "
                f"= {self.flops:.3g} FLOPs")


def bert_base_cost() -> TrainingCost:
    """BERT-base's pretraining, from the paper's schedule."""
    phases = [(round(share * BERT_BASE_STEPS), length) for share, length in BERT_BASE_PHASES]
    tokens = sum(steps * BERT_BASE_BATCH * length for steps, length in phases)
    lines = [f"{steps:,} steps × {BERT_BASE_BATCH} sequences × {length} tokens = {steps * BERT_BASE_BATCH * length:,}"
             for steps, length in phases]
    lines.append(f"together {tokens:,} tokens")
    return TrainingCost("BERT-base (paper)", BERT_BASE_PARAMS, tokens, BERT_BASE_STEPS, lines)


def run_cost(label: str, params: int, tokens: int, steps: int, seconds: float = 0.0) -> TrainingCost:
    """A run's cost from what it logged: its parameters, the tokens it had read and its steps."""
    if params <= 0:
        raise ValueError(f"{label} does not say how many parameters it has.")
    if tokens < 0 or steps < 0:
        raise ValueError(f"{label} logged a negative number of tokens or steps.")
    lines = [f"{tokens:,} tokens read in {steps:,} steps" + (f" ({seconds:,.0f} s of training)" if seconds else "")]
    return TrainingCost(label, int(params), int(tokens), int(steps), lines)
