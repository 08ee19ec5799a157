""""Show the code" names the model that answered the view: the stand-in when the hub is unreachable (its
folder on a local server), and every name in the lines above the code is a Python literal."""

from __future__ import annotations

import ast
import contextlib
import io

import pytest

from bertdemo.explore import fill_mask
from bertdemo.models import embedded
from bertdemo.models.hub import HubProbe
from bertdemo.models.policy import AccessPolicy
from bertdemo.models.store import ModelStore
from bertdemo.snippets import views as code_snippets
from bertdemo.ui.code_panel import engine_tokenizer_reference, model_reference, with_model_note

NICE = "Nice to [MASK] you."


def _store(public: bool) -> ModelStore:
    policy = AccessPolicy(public_max_model_gb=1.0 if public else None, hub=HubProbe(offline=True))
    return ModelStore(default="bert-base-uncased", device="cpu", policy=policy)


def test_the_code_loads_the_stand_in_that_answered_and_prints_the_views_words():
    """Offline, the default asks for bert-base-uncased and the embedded model answers: the code loads the
    embedded model's folder (it runs offline) and prints exactly the view's words; it says bert-base would not."""
    store = _store(public=False)
    ref, note = model_reference(store, "", public=False)
    loaded = store.get()
    assert loaded.name == embedded.EMBEDDED_MLM_NAME and ref == str(loaded.path)
    assert "ASKED_FOR = 'bert-base-uncased'" in note and "would print other numbers" in note
    source = note + code_snippets.fill_mask_code(ref, NICE, 5)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<snippet>", "exec"), {})  # noqa: S102 - our own generated code
    view = fill_mask.predict(loaded, NICE, top_k=5)
    assert ast.literal_eval(out.getvalue().splitlines()[0]) == [(c.token, round(c.prob, 4)) for c in view.masks[0].candidates]


def test_on_a_public_server_the_code_names_the_model_without_a_server_path():
    store = _store(public=True)
    ref, note = model_reference(store, "", public=True)
    assert ref == embedded.EMBEDDED_MLM_NAME
    assert f"SERVER_MODEL = {embedded.EMBEDDED_MLM_NAME!r}" in note and "/" + "home" not in note
    assert ast.parse(note)  # comments and literals only


@pytest.mark.parametrize("name", ["run:x\rprint('PWNED')\n#", "embedded/x\rprint('PWNED')", "./x\nprint('PWNED')"])
def test_a_model_name_with_line_breaks_never_reaches_the_code(name):
    """The name went into a # comment; a carriage return in it ran the rest as code under plain python."""
    with pytest.raises(ValueError):
        model_reference(_store(public=True), name, public=True)


def test_the_masking_code_loads_bert_base_vocabulary_offline_from_the_embedded_folder():
    assert engine_tokenizer_reference(_store(public=False), public=False) == str(embedded.tokenizer_dir())
    assert engine_tokenizer_reference(_store(public=True), public=True) == "bert-base-uncased"


def test_code_that_loads_no_model_gets_no_note_about_the_model_below(tiny_loaded, tiny_mlm_dir):
    """Learn step 9's code (bert-base built from a config) and step 11's (arithmetic) began "The view's numbers
    came from the model below … ASKED_FOR itself would print other numbers" with no model below; the
    steps whose code loads MODEL keep the note."""
    from bertdemo.learn import path as learn_path

    _ref, note = model_reference(_store(public=False), "", public=False)
    text = "The cat sat on the mat."
    for key in ("family", "length"):
        code = learn_path.answer(tiny_loaded, key, text, model_ref=str(tiny_mlm_dir)).code
        assert "from_pretrained(MODEL" not in code and with_model_note(note, code) == code, key
    loss = learn_path.answer(tiny_loaded, "loss", text, model_ref=str(tiny_mlm_dir)).code
    assert with_model_note(note, loss) == note + loss and "ASKED_FOR = 'bert-base-uncased'" in note
