"""The fine-tuning lab's shared services: the topic task's splits, its landmarks (majority class, bag of
words, a linear probe on the frozen embedded model), the layer probes of any model, and classification with
a fine-tuned checkpoint. One per server, in the app context; torch-free at import (each piece imports what it
needs when first used). Everything computed is computed once: the landmarks are saved in the cache folder,
the layer probes, features and classifiers are kept in memory within the server's memory budget
(:mod:`bertdemo.memory`). Only computing takes the lab's lock: a cached answer is read without waiting.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from bertdemo import storage
from bertdemo.locks import LOGIC_IMPORT_LOCK
from bertdemo.memory import DEFAULT_BUDGET_GB, MemoryBudget
from bertdemo.request_budget import WorkBudget, checking, unbounded

BASELINES_FILE = "topic_baselines-v2.json"  # v2: every choice made on validation, the test accuracy drawn
CLASSIFIERS_KEPT = 2  # fine-tuned models kept loaded for /classify (each about 90 MB)
ONE_SENTENCE_TOKENS = 512  # a sentence classified or tagged: at most this many pieces (one small forward)
PROBES_KEPT = 32  # layer-probe results kept (model, task): a few floats each, computed in about 20 s
Progress = Callable[[float, str], None]


def read_baselines(cache_dir: str | Path) -> dict[str, float]:
    """The topic task's landmarks saved in ``cache_dir`` as their test accuracy (each chosen on validation: the
    bag of words' penalty, the probe's layer and penalty); {} when not computed yet."""
    try:
        data = json.loads((Path(cache_dir) / BASELINES_FILE).read_text())
    except (OSError, ValueError):
        return {}
    values = data.get("test_accuracy", {}) if isinstance(data, dict) else {}
    return {str(k): float(v) for k, v in values.items() if isinstance(v, (int, float))}


class FinetuneLab:
    """The topic task and everything measured on it, for one server."""

    def __init__(self, cache_dir: str | Path, budget: MemoryBudget | None = None) -> None:
        self.cache_dir = Path(cache_dir)
        self.budget = budget or MemoryBudget.gigabytes(DEFAULT_BUDGET_GB)
        self._lock = threading.Lock()  # one landmark / probe computation at a time (they share the cores)
        self._splits = None
        self._features = None
        self._probes = self.budget.cache("layer probes", max_entries=PROBES_KEPT)  # (weights key, task)
        self._baselines: dict[str, float] | None = None  # read from the cache folder once (every page polls it)
        self._classifiers = self.budget.cache("fine-tuned classifiers", max_entries=CLASSIFIERS_KEPT)
        self._name_splits = None
        self._changes = self.budget.cache("layer changes", max_entries=PROBES_KEPT)  # (folder, weights' stamp)

    # --- the task ---------------------------------------------------------------------------------
    def splits(self):
        """The topic task's DatasetDict (train / validation / test), built once in the cache folder."""
        if self._splits is None:
            with LOGIC_IMPORT_LOCK:
                from bertdemo.corpus.topics import load_topic_splits
            self._splits = load_topic_splits(self.cache_dir)
        return self._splits

    def class_balance(self) -> dict[str, dict[str, int]]:
        with LOGIC_IMPORT_LOCK:
            from bertdemo.corpus.topics import class_balance
        return class_balance(self.splits())

    def features(self):
        """The activation cache shared by the landmark probe and the layer probes."""
        if self._features is None:
            with LOGIC_IMPORT_LOCK:
                from bertdemo.finetune.features import ActivationCache
            self._features = ActivationCache(budget=self.budget)
        return self._features

    # --- landmarks --------------------------------------------------------------------------------
    def baselines(self) -> dict[str, float]:
        """The landmarks' test accuracy ({} until computed on this server)."""
        if not self._baselines:
            self._baselines = read_baselines(self.cache_dir)
        return self._baselines

    def compute_baselines(self, embedded_model, progress: Progress | None = None,
                          budget: WorkBudget | None = None) -> dict[str, float]:
        """Majority class, bag of words + logistic regression, and the best layer's linear probe on the frozen
        embedded model (mean-pooled), on the same split, each chosen on validation; saved (atomically) and returned
        as test accuracy. ``budget``: the request's, checked before the work and after each batch of features."""
        done = self.baselines()
        if done:
            return done
        budget = budget or unbounded()
        progress = checking(progress, budget)
        with self._lock:
            done = self.baselines()
            if done:
                return done
            budget.check()  # the wait for the lock counts too
            with LOGIC_IMPORT_LOCK:
                from bertdemo.finetune.baselines import bag_of_words_baseline, frozen_probe, majority_baseline
                from bertdemo.models.store import weights_key
            splits = self.splits()
            progress(0.02, "Majority class and bag of words…")
            majority, bow = majority_baseline(splits), bag_of_words_baseline(splits)
            probes = frozen_probe(embedded_model.name, embedded_model.model, embedded_model.tokenizer, splits,
                                  self.features(), progress=progress, weights_key=weights_key(embedded_model))
            probe = probes["mean"].baseline()
            found = {"majority": majority, "bag_of_words": bow, "frozen_probe": probe}
            data = {"val_accuracy": {k: b.val_accuracy for k, b in found.items()},
                    "test_accuracy": {k: b.test_accuracy for k, b in found.items()},
                    "names": {"majority": "majority class",
                              "bag_of_words": "bag of words + logistic regression (C chosen on validation)",
                              "frozen_probe": f"linear probe on the frozen embedded model, layer "
                                              f"{probes['mean'].best_layer} (mean-pooled; layer and C chosen on "
                                              "validation)"},  # no server path
                    "frozen_probe_per_layer": {"validation": list(probes["mean"].val_accuracy),
                                               "test": list(probes["mean"].test_accuracy)}}
            storage.write_text(self.cache_dir / BASELINES_FILE, json.dumps(data, indent=2))
            self._baselines = None
            return self.baselines()

    def baseline_details(self) -> dict:
        """Everything saved about the landmarks (names, test accuracy, the probe per layer); {} before."""
        try:
            return json.loads((self.cache_dir / BASELINES_FILE).read_text())
        except (OSError, ValueError):
            return {}

    # --- which layer knows what -------------------------------------------------------------------
    def layer_probes(self, loaded, task: str, progress: Progress | None = None, budget=None):
        """Every layer of ``loaded`` (a store's LoadedModel) probed on ``task`` with its controls; cached by its
        weights (a checkpoint saved again under the same name is probed again), as are its features
        (``budget``: the request's WorkBudget, for a probe not cached)."""
        with LOGIC_IMPORT_LOCK:
            from bertdemo.models.store import weights_key
        weights = weights_key(loaded)

        def compute():
            with LOGIC_IMPORT_LOCK:
                from bertdemo.finetune.layer_probes import probe_layers
            with self._lock:
                return probe_layers(loaded.name, loaded.model, loaded.tokenizer, self.features(),
                                    tasks=(task,), progress=progress, weights_key=weights, budget=budget)[0]

        return self._probes.get_or_build((weights, task), compute)

    def checkpoint_probes(self, folders: list[str], progress: Progress | None = None, budget: WorkBudget | None = None):
        """The bigram-shift probe of each checkpoint folder (a pretraining run's): when did it learn word order?
        (``budget``: the request's, checked before each checkpoint and after each batch of features.)"""
        with self._lock:
            with LOGIC_IMPORT_LOCK:
                from bertdemo.finetune.layer_probes import probe_checkpoints
            return probe_checkpoints(folders, self.features(), progress=progress, budget=budget)

    # --- what fine-tuning changed -------------------------------------------------------------------
    def layer_change(self, name: str, folder: str, progress: Progress | None = None, budget=None, texts=None):
        """What fine-tuning changed in the run saved in ``folder`` (``name``: ft:<run id>), per layer, on the
        validation sentences (``texts`` instead, for a task of another server's making); computed once per saved
        model (:func:`bertdemo.finetune.layer_change.measure_layer_change`)."""
        stamp = (folder, (Path(folder) / "model.safetensors").stat().st_mtime_ns)

        def compute():
            with LOGIC_IMPORT_LOCK:
                from bertdemo.finetune.layer_change import measure_layer_change
            sentences = texts if texts is not None else list(self.splits()["validation"]["text"])
            with self._lock:
                return measure_layer_change(name, folder, sentences, cache_dir=self.cache_dir, budget=budget,
                                            progress=progress)

        return self._changes.get_or_build(stamp, compute)

    # --- a fine-tuned model answers -------------------------------------------------------------------
    def classify(self, folder: str, text: str, budget: WorkBudget | None = None) -> tuple[list[str], list[float]]:
        """(topic names, P(topic | text)) from the fine-tuned model in ``folder`` (its own forward, eval mode, on one
        thread: :func:`bertdemo.models.threads.small_forward`); ``budget``: the request's, checked before the model
        is loaded and again before its forward."""
        budget = budget or unbounded()
        budget.check()
        with LOGIC_IMPORT_LOCK:
            import torch

            from bertdemo.finetune.engine import topic_probabilities
            from bertdemo.models.threads import small_forward
        model, tokenizer = self._classifier(folder)
        budget.check()  # loading a fine-tuned model may have taken the time
        with torch.inference_mode(), small_forward(ONE_SENTENCE_TOKENS):
            probs = topic_probabilities(model, tokenizer, text, ONE_SENTENCE_TOKENS, torch.device("cpu"))
        return [model.config.id2label[i] for i in range(len(probs))], probs

    def _classifier(self, folder: str, kind: str = "sequence"):
        stamp = f"{folder}:{(Path(folder) / 'model.safetensors').stat().st_mtime_ns}:{kind}"

        def load():
            with LOGIC_IMPORT_LOCK:
                from transformers import AutoTokenizer, BertForSequenceClassification, BertForTokenClassification

                from bertdemo.locks import MODEL_INIT_LOCK
            model_class = BertForTokenClassification if kind == "token" else BertForSequenceClassification
            saved = json.loads((Path(folder) / "config.json").read_text()).get("architectures") or []
            if saved and model_class.__name__ not in saved:  # a names run's head reads words, not sentences
                raise ValueError(f"That fine-tuned model is a {saved[0]}: "
                                 + ("tag words with it (Find the names)." if kind == "sequence"
                                    else "classify sentences with it."))
            with MODEL_INIT_LOCK:  # transformers sets a process-wide default dtype while it builds a model
                model = model_class.from_pretrained(folder, use_safetensors=True).eval()
            return model, AutoTokenizer.from_pretrained(folder)

        return self._classifiers.get_or_build(stamp, load)

    # --- Find the names: a label per word ------------------------------------------------------------------
    def name_splits(self):
        """The names task's split by summary (:mod:`bertdemo.corpus.names`), built once in the cache folder."""
        if self._name_splits is None:
            with LOGIC_IMPORT_LOCK:
                from bertdemo.corpus.names import load_name_splits
            self._name_splits = load_name_splits(self.cache_dir)
        return self._name_splits

    def word_probes(self, loaded, progress: Progress | None = None, budget=None):
        """Every layer of ``loaded`` probed per word for names, with its random-weight control; cached by its
        weights beside the sentence-level probes."""
        with LOGIC_IMPORT_LOCK:
            from bertdemo.models.store import weights_key
        weights = weights_key(loaded)

        def compute():
            with LOGIC_IMPORT_LOCK:
                from bertdemo.finetune.word_probes import probe_names
            splits = self.name_splits()
            with self._lock:
                return probe_names(loaded.name, loaded.model, loaded.tokenizer, splits, progress=progress,
                                   budget=budget)

        return self._probes.get_or_build((weights, "names"), compute)

    def cached_layer_probes(self, loaded) -> dict:
        """The probes of ``loaded`` already computed on this server, by task (nothing is computed here)."""
        with LOGIC_IMPORT_LOCK:
            from bertdemo.models.store import weights_key
        weights = weights_key(loaded)
        return {key[1]: value for key in self._probes.keys() if key[0] == weights  # noqa: SIM118 - a ByteLRU
                and (value := self._probes.get(key)) is not None}

    def tag(self, folder: str, text: str) -> list[tuple[str, str, float]]:
        """Each word of ``text`` with its label and that label's probability from the token classifier saved in
        ``folder`` (its own forward, eval mode, on one thread)."""
        with LOGIC_IMPORT_LOCK:
            from bertdemo.finetune.token_engine import tag_sentence
            from bertdemo.models.threads import small_forward
        model, tokenizer = self._classifier(folder, kind="token")
        with small_forward(ONE_SENTENCE_TOKENS):
            return tag_sentence(model, tokenizer, text, ONE_SENTENCE_TOKENS)
