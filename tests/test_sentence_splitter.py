"""One sentence splitter: the corpus's, used by the probes, Word in context, the NSP lab and the snippets."""

import re

from bertdemo.corpus.sentences import split_sentences
from bertdemo.explore import nsp
from bertdemo.limits import MIN_CORPUS_SENTENCE_CHARS
from bertdemo.models.embedded import wiki_summaries
from bertdemo.snippets.finetune import finetune_code
from bertdemo.snippets.sentences import splitter_code
from bertdemo.snippets.words import neighbours_code


def test_the_snippets_splitter_cuts_every_summary_where_the_app_does():
    namespace = {"re": re}
    exec(splitter_code(), namespace)  # noqa: S102 - the app's own snippet, run as a learner would
    docs = wiki_summaries()
    assert [namespace["split_sentences"](d) for d in docs] == [split_sentences(d) for d in docs]
    assert namespace["split_sentences"]("St. Paul met Dr. Who in the U.S. in 1990. Then he left.") == [
        "St. Paul met Dr. Who in the U.S. in 1990.", "Then he left."]


def test_both_corpus_snippets_carry_the_apps_splitter():
    for code in (finetune_code("some/model"), neighbours_code("some/model", "The bank was closed.")):
        assert splitter_code() in code
    assert f"if len(s) > {MIN_CORPUS_SENTENCE_CHARS}]" in neighbours_code("some/model", "The bank was closed.")


def test_the_nsp_lab_keeps_wrapped_lines_together_and_does_not_cut_at_abbreviations():
    document = "Dr. Smith went to St. Louis\nby train. He arrived late! Was it raining?"
    assert nsp.document_sentences(document) == ["Dr. Smith went to St. Louis by train.", "He arrived late!",
                                                "Was it raining?"]
