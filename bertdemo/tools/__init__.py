"""Command-line builders and evaluators: the embedded masked-LM's build, its corpus, cloze scoring."""
