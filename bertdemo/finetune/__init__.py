"""Fine-tuning's data and yardsticks (no gradio; the page wires these).

* the topic task itself lives below the run kinds, in :mod:`bertdemo.corpus.topics` (pretraining reads its
  :func:`held_out_titles`, the summaries a pretraining corpus leaves out).
* :mod:`~bertdemo.finetune.baselines`: landmarks from the same split — :func:`majority_baseline`,
  :func:`bag_of_words_baseline`, :func:`frozen_probe` (every layer of a frozen model).
* :mod:`~bertdemo.finetune.features`: :class:`ActivationCache`, every layer's pooled features per
  (model, texts), bounded in bytes; :mod:`~bertdemo.finetune.linear_head`: the probes' logistic regression
  (scikit-learn, C chosen on validation); :mod:`~bertdemo.finetune.scores`: accuracy, macro-F1, confusion.
* :mod:`~bertdemo.finetune.probe_tasks` (torch-free) and :mod:`~bertdemo.finetune.layer_probes`: "which
  layer knows what" — length / bigram shift / topic probes of every layer with their controls
  (:func:`probe_layers`), and across a pretraining run's checkpoints (:func:`probe_checkpoints`).
"""
