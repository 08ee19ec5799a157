"""Messages more than one view gives, in one wording: torch-free, so the page can show them before
PyTorch loads."""

from __future__ import annotations

from bertdemo.models.embedded import EMBEDDED_MLM_NAME


def no_head_message(name: str) -> str:
    """Why a model without a trained masked-LM head cannot fill masks, and what to choose instead."""
    return (
        f"{name} has no trained masked-LM head, so it cannot predict words "
        "(a randomly initialised head would only produce noise). Choose a masked-LM: "
        f"{EMBEDDED_MLM_NAME} (works offline), "
        "bert-base-uncased, distilbert-base-uncased or roberta-base when the hub is reachable, "
        "a model in a local folder, or a checkpoint from the Pretrain tab."
    )
