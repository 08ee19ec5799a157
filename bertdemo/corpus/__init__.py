"""The labelled data the app builds from what it ships, below every run kind: the topic task's split of the
embedded Wikipedia summaries (:mod:`~bertdemo.corpus.topics`, whose validation and test summaries every
pretraining corpus leaves out) and the sentence splitter it uses (:mod:`~bertdemo.corpus.sentences`).
Torch-free."""
