"""Which models the twin comparison may pair: masked LMs on one side, left-to-right LMs on the other.

Torch-free (the page builds its pickers before PyTorch loads): a run checkpoint's objective is read from
its ``config.json`` (``is_decoder``: a left-to-right ``BertLMHeadModel``), never by loading the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from bertdemo.models import twins


def objective_of_folder(folder: str | Path) -> str:
    """"ltr" when the model folder's config says ``is_decoder`` (a left-to-right LM), else "mlm"."""
    path = Path(folder) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "mlm"
    return "ltr" if bool(config.get("is_decoder", False)) else "mlm"


def pair_choices(choices: list[tuple[str, str]], resolve: Callable[[str], str | None]
                 ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(masked-LM choices, left-to-right choices) from the model pickers' (label, name) list; ``resolve``
    gives a local name's folder (a run's ``run:<id>/...``), None for a hub or embedded name (masked LMs); the
    shipped twins (:data:`bertdemo.models.twins.TWIN_NAMES`) go to their own sides."""
    mlm, ltr = [], []
    for label, name in choices:
        kind = twins.twin_kind(name)
        try:
            folder = str(twins.twin_dir(kind)) if kind else resolve(name)
        except ValueError:  # a run deleted meanwhile
            continue
        (ltr if folder and objective_of_folder(folder) == "ltr" else mlm).append((label, name))
    return mlm, ltr


def default_pair(mlm: list[tuple[str, str]], ltr: list[tuple[str, str]], fallback_mlm: str
                 ) -> tuple[str | None, str | None]:
    """The pair a page opens with: the shipped twins that show the claim (one recipe, only the objective differs:
    :func:`bertdemo.models.twin_curve.showcase_pair`) when both are offered; else ``fallback_mlm`` (or the first
    masked LM) beside the first left-to-right LM."""
    from bertdemo.models import twin_curve

    names_mlm, names_ltr = [n for _l, n in mlm], [n for _l, n in ltr]
    curve = twin_curve.read_curve()
    kinds = twins.PAIRS[twin_curve.showcase_pair(curve) if curve is not None else "paper"]
    shown = twins.TWIN_NAMES[kinds[0]], twins.TWIN_NAMES[kinds[1]]
    if shown[0] in names_mlm and shown[1] in names_ltr:
        return shown
    first_mlm = fallback_mlm if fallback_mlm in names_mlm else (names_mlm[0] if names_mlm else None)
    return first_mlm, (names_ltr[0] if names_ltr else None)


def checkpoint_step(folder: str | Path) -> int:
    """The training step a run checkpoint was saved at (its ``trainer_state.json``); ValueError if it has none."""
    try:
        return int(json.loads((Path(folder) / "trainer_state.json").read_text(encoding="utf-8"))["step"])
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f"{Path(folder).name} is not a training checkpoint.") from err
