"""What every run kind shares: the machine's one training slot and the rules around it.

Read in order: ``status`` (where a run is, and a snapshot behind a lock), ``control`` (pause / resume /
stop events a run's loop checks), ``folders`` (run folders on disk: owner, visitor, expiry, deletion),
``slot`` (a run on its thread with its wall-time cap, and the manager that starts runs one at a time on
this machine), ``kinds`` (what a run kind plugs in) and ``service`` (the rules every kind obeys: who may
control a run, the per-visitor quota, clean-up, shutdown). Pretraining (:mod:`bertdemo.pretrain`) and
fine-tuning (:mod:`bertdemo.finetune`) are kinds built on it; this package imports neither.
Torch-free.
"""
