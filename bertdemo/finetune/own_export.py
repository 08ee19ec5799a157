"""A fine-tuned run's model as a zip a learner downloads: one folder that stock
``AutoModelForSequenceClassification`` / ``AutoModelForTokenClassification`` and ``AutoTokenizer`` load, with the
label names in its ``config.json`` (``id2label`` / ``label2id``). Torch-free; the app's own files (settings,
history) stay on the server.

The weights travel in half precision (:data:`WEIGHTS_DTYPE`, fp16): half the download (the embedded model's
sentence classifier, 91.6 MB in float32, is about 46 MB). The folder's ``config.json`` keeps ``dtype: float32``, so
stock ``from_pretrained`` reads them back as the float32 model it always gave — both kinds the learner makes (a
sentence classifier, a word tagger) load so — its probabilities the page's to fp16 rounding (about 1e-3 at most).
A tensor fp16 cannot hold (beyond ±65,504) stays float32; a run that kept the frozen start's classifier
(:func:`frozen_kept`) travels whole in float32. The zip is made once per run and reported as it goes
(``progress``), so a large model shows progress while it is built."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bertdemo import storage
from bertdemo.finetune.own_run import RESULT_FILE
from bertdemo.finetune.run import MODEL_DIRNAME

APP_FILES = ("finetune_config.json", "finetune_history.json")  # the app's records, not the model's
WEIGHTS_DTYPE = "float16"  # how the zip's weights travel (stock from_pretrained reads them back as float32)
FP16_MAX = float(np.finfo(np.float16).max)  # 65,504: a tensor beyond it stays float32
Progress = Callable[[float, str], None]  # (fraction done, what it is doing)


def half_weights(path: Path, progress: Progress | None = None, start: float = 0.0, share: float = 1.0) -> bytes:
    """The safetensors file ``path`` with its float32 tensors in fp16 (one fp16 cannot hold stays float32), its
    metadata kept (transformers reads ``format``), as bytes; ``progress`` told from ``start`` over ``share``."""
    from safetensors import safe_open
    from safetensors.numpy import save

    tell = progress or (lambda done, what: None)
    tensors: dict[str, np.ndarray] = {}
    with safe_open(str(path), "np") as f:
        metadata, names = f.metadata(), list(f.keys())
        for i, name in enumerate(names):
            tensor = f.get_tensor(name)
            if tensor.dtype == np.float32 and (tensor.size == 0 or float(np.abs(tensor).max()) <= FP16_MAX):
                tensor = tensor.astype(np.float16)
            tensors[name] = tensor
            if i % 16 == 0:
                tell(start + share * i / len(names), f"Weights to fp16: {i:,} of {len(names):,} tensors")
    return save(tensors, metadata=metadata)


NO_MODEL = ("This run kept no model: it was stopped before it had one worth keeping. Its result (what it scored "
            "before the stop) and your data stay; start it again for a model.")


def frozen_kept(run_folder: str | Path) -> bool:
    """Whether the run kept the frozen start's classifier (:mod:`bertdemo.finetune.frozen_features`): its weights
    travel in float32, since its head divides by its features' small spread and fp16's rounding of the encoder
    moved its answers by a few points of probability."""
    try:
        return json.loads((Path(run_folder) / RESULT_FILE).read_text()).get("kept") == "frozen_features"
    except (OSError, ValueError):
        return False


def model_zip(run_folder: str | Path, out_dir: str | Path, name: str, progress: Progress | None = None) -> Path:
    """``<out_dir>/<name>.zip`` holding ``<name>/`` (the run's saved model folder, its weights in fp16 — float32 for a
    frozen-features classifier, :func:`frozen_kept`), written
    atomically; made again only when the model folder is newer. ``progress(fraction, what)`` hears how far it is,
    1.0 last."""
    tell = progress or (lambda done, what: None)
    model = Path(run_folder) / MODEL_DIRNAME
    if not (model / "config.json").is_file():
        raise ValueError(NO_MODEL)
    target = Path(out_dir) / f"{name}.zip"
    files = [p for p in sorted(model.iterdir()) if p.is_file() and p.name not in APP_FILES]
    half = not frozen_kept(run_folder)
    if target.is_file() and target.stat().st_mtime >= max(p.stat().st_mtime for p in files):
        tell(1.0, "The zip, made before")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    total = sum(p.stat().st_size for p in files) or 1
    done = 0
    with storage.atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as zf:
        for path in files:  # (stored: the weights do not compress)
            share = path.stat().st_size / total
            tell(done / total, f"Zipping {path.name}")
            if path.suffix == ".safetensors" and half:
                zf.writestr(f"{name}/{path.name}", half_weights(path, tell, done / total, share))
            else:
                zf.write(path, f"{name}/{path.name}")
            done += path.stat().st_size
    tell(1.0, f"{name}.zip is ready")
    return target
