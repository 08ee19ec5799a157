"""A fine-tuned run's model as a zip a learner downloads: one folder that stock
``AutoModelForSequenceClassification`` / ``AutoTokenizer`` load, with the label names in its ``config.json``
(``id2label`` / ``label2id``). Torch-free; the app's own files (settings, history) stay on the server."""

from __future__ import annotations

import zipfile
from pathlib import Path

from bertdemo import storage
from bertdemo.finetune.run import MODEL_DIRNAME

APP_FILES = ("finetune_config.json", "finetune_history.json")  # the app's records, not the model's


def model_zip(run_folder: str | Path, out_dir: str | Path, name: str) -> Path:
    """``<out_dir>/<name>.zip`` holding ``<name>/`` (the run's saved model folder), written atomically."""
    model = Path(run_folder) / MODEL_DIRNAME
    if not (model / "config.json").is_file():
        raise ValueError("This run has no saved model yet.")
    target = Path(out_dir) / f"{name}.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    with storage.atomic_path(target) as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as zf:  # the weights do not compress
            for path in sorted(model.iterdir()):
                if path.is_file() and path.name not in APP_FILES:
                    zf.write(path, f"{name}/{path.name}")
    return target
