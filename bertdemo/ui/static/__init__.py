"""The page's own static files (JavaScript, CSS), read by the UI modules that use them; see :func:`read`."""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).resolve().parent


def read(name: str) -> str:
    """The text of the static file ``name`` (e.g. ``"phone.js"``) in this folder."""
    path = FOLDER / name
    if path.parent != FOLDER or not path.is_file():
        raise ValueError(f"no static file {name!r} in {FOLDER.name}/")
    return path.read_text(encoding="utf-8")
