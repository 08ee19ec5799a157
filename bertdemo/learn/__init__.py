"""The Learn tab's path: the steps (:mod:`steps`, torch-free) and their answers (:mod:`path`), composed
from the views, pretraining and fine-tuning below it. This package file imports nothing.
"""
