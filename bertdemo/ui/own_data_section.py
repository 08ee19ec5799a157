"""The Fine-tune tab's section for the learner's own labelled sentences: paste ``label<TAB>text`` lines (or
load the 20-sentence sentiment example), word labels ``word<TAB>tag`` (or the 20-sentence word-tag example),
upload a CSV / TSV, or name a hub dataset; fine-tune from the embedded model or from random weights of the same
shape (the control); read the honest small-data score; classify (or tag) new sentences with the result;
download it as a folder stock transformers loads (its weights in fp16, read back as float32), in one click that
shows the zip's making as it goes.

Wiring only: the run is a fine-tuning run (``ctx.finetune_runs.start`` with ``task`` "own"), so it takes the
training slot, the caps, the quota, pause and stop like any other; its result is read from the run's own
folder for its owner alone (:meth:`FinetuneService.own_ids`). The live run's progress is the tab's status; the
section's result is a part of the tab's poll (:class:`~bertdemo.ui.tab_poll.TabPoll`).
"""

from __future__ import annotations

import functools
import secrets
import shutil
from pathlib import Path
from typing import Any

import gradio as gr

from bertdemo.finetune.config import EMBEDDED, RANDOM, config_from_request
from bertdemo.finetune.own_data import (
    MAX_EXAMPLES,
    MAX_LABELS,
    MAX_PASTE_CHARS,
    MAX_TEXT_CHARS,
    MIN_LABELS,
    MIN_PER_LABEL,
    SENTIMENT_EXAMPLE,
    WORDS_EXAMPLE,
)
from bertdemo.finetune.own_export import NO_MODEL, WEIGHTS_DTYPE, model_zip
from bertdemo.finetune.own_run import DATA_FILE, own_request, read_result
from bertdemo.runs.uploads import forget_original_upload
from bertdemo.ui import common, downloads, run_starts
from bertdemo.ui.common import visitor_of
from bertdemo.ui.heavy_requests import current_budget
from bertdemo.viz import finetune as viz
from bertdemo.viz.own_data import result_markdown, tagged_markdown

INTRO = (
    "Bring **your own labelled sentences**: one example a line, its label, a tab, then the text — or a CSV / TSV "
    "file with a text and a label column, or a hub dataset's name (when this server reaches the hub). "
    f"At most {MAX_EXAMPLES:,} examples and {MAX_TEXT_CHARS:,} characters a text; {MIN_LABELS}–{MAX_LABELS} "
    f"labels with at least {MIN_PER_LABEL} examples each. Under 200 examples one split would be too small to "
    "trust, so the score is a **5-fold cross-validation** (mean and spread), beside the majority class, a "
    "bag of words and **the paper's other way to use BERT** (§5.3): the start's frozen [CLS] vectors with a "
    "logistic regression on top, on the same folds; from 200, a seeded train / validation / test split: the "
    "validation split chooses the number of epochs, the test split reports. The model kept is whichever of "
    "fine-tuning and the frozen features scored higher (a few dozen sentences often favour the frozen ones). Start "
    "from random weights of the same shape to see what pretraining brings to so few examples.\n\n"
    "**A label per word** instead: one word, a tab, its tag a line, a blank line between sentences (CoNLL style). "
    "A token classifier learns it (each word's tag on its first WordPiece), scored over words beside the majority "
    "tag and per-word memory (the tag each word had most often in training) on the same folds."
)

ANSWERED = ("answered",)  # what the poll last drew, after a start answered in the result box: no run's (id, status)
# what the zip holds, said beside its button (bertdemo.finetune.own_export: the weights in fp16, read back as float32)
ZIP_NOTE = (f"*The zip is one folder stock transformers loads (`AutoModelForSequenceClassification` for sentence "
            f"labels, `AutoModelForTokenClassification` for word labels, `AutoTokenizer`), the label names in its "
            f"`config.json`. Its weights travel in half precision ({WEIGHTS_DTYPE}: half the download); both kinds "
            "load so, and `from_pretrained` reads them back as float32 — the probabilities this page shows, to "
            "fp16 rounding (about 0.001 at most).*")


def zip_note(path: Path) -> str:
    """What the page says once the zip is made: its name and size, then :data:`ZIP_NOTE`."""
    return f"Downloaded `{path.name}` ({path.stat().st_size / 1e6:,.1f} MB). " + ZIP_NOTE


def build(ctx: Any, owner: gr.Textbox, export_dir: Path, poll: Any) -> gr.Markdown:
    """Lay out the section (inside the Fine-tune tab) and wire it; ``owner``: the browser's owner token box;
    ``poll``: the tab's :class:`~bertdemo.ui.tab_poll.TabPoll`. Returns the box its start answers in (a queued
    run's place, until the tab's queue line cancels it)."""
    runs, slot, lab, public = ctx.finetune_runs, ctx.runs, ctx.finetune, ctx.settings.is_public
    user_errors = functools.partial(common.user_errors, public=public)

    with gr.Accordion("Fine-tune on your own labelled sentences", open=True, elem_id="own-box"):
        gr.Markdown(INTRO)
        with gr.Row():
            with gr.Column(scale=1, min_width=300):
                lines = gr.Textbox(label="label<TAB>text, one example a line (or word<TAB>tag)", lines=8,
                                   max_lines=16, max_length=MAX_PASTE_CHARS, placeholder="positive\tA lovely film.",
                                   elem_id="own-lines")
                label_per = gr.Radio([("read it from the lines", "auto"), ("a sentence: label<TAB>text", "sentence"),
                                      ("a word: word<TAB>tag, a blank line between sentences", "word")],
                                     value="auto", label="Each line labels", elem_id="own-label-per")
                with gr.Row():
                    example = gr.Button("Load a 20-sentence sentiment example", size="sm", elem_id="own-example",
                                        min_width=140)
                    words_example = gr.Button("Load a 20-sentence word-tag example", size="sm",
                                              elem_id="own-words-example", min_width=140)
                with gr.Accordion("…or a CSV / TSV file, or a hub dataset", open=False, elem_id="own-more"):
                    upload = gr.File(label="A .csv or .tsv file with a header row", file_types=[".csv", ".tsv"],
                                     type="filepath", elem_id="own-file")
                    with gr.Row():
                        text_col = gr.Textbox(label="Text column (if not 'text')", max_length=100, min_width=120)
                        label_col = gr.Textbox(label="Label column (if not 'label')", max_length=100, min_width=120)
                    hub = gr.Textbox(label="A hub dataset (owner/name), instead", max_length=200, elem_id="own-hub")
                init = gr.Radio([("the embedded pretrained model", EMBEDDED),
                                 ("random weights, same shape (the control)", RANDOM)], value=EMBEDDED,
                                label="Start your examples' run from", elem_id="own-init")
                start = gr.Button("Fine-tune on these examples", variant="primary", elem_id="own-start")
            with gr.Column(scale=2, min_width=300):
                result = gr.Markdown(elem_id="own-result")
                pick = gr.Dropdown([], label="Your runs on your own data", allow_custom_value=True,
                                   elem_id="own-pick")
                with gr.Row():
                    sentence = gr.Textbox("What a wonderful day out with friends.", label="A new sentence",
                                          max_length=MAX_TEXT_CHARS, scale=3, min_width=200, elem_id="own-sentence")
                    classify = gr.Button("Classify / tag", scale=1, min_width=90, elem_id="own-classify")
                answer = gr.Markdown(elem_id="own-answer")
                with gr.Row():  # each builds its file when pressed and downloads it in the same click
                    download, zip_file = downloads.button("Download the model (.zip)", "own-zip", min_width=160)
                    data_csv, csv_file = downloads.button("Your data + held-out predictions (CSV)", "own-csv",
                                                          min_width=160)
                download_note = gr.Markdown(ZIP_NOTE, elem_id="own-download-note")
        seen = gr.State(None)

    def mine(token: str) -> list[str]:
        return runs.own_ids(token or "")

    @user_errors
    def own_start(request: gr.Request, token: str, pasted: str, file: str | None, text_column: str,
                  label_column: str, hub_name: str, start_from: str, per: str):
        token = token or secrets.token_urlsafe(24)
        settings = {"init": start_from or EMBEDDED, "lines": pasted or "", "hub_dataset": hub_name or "",
                    "text_column": text_column or "", "label_column": label_column or "", "label_per": per or "auto"}
        visitor = visitor_of(request)
        try:  # the examples read and bounded now, so a start the busy slot queues holds them, not the upload
            own, rest = own_request(settings, file or None, ctx.settings.cache_dir,
                                    runs.hub.reachable if runs.hub is not None else (lambda: False))
        finally:
            if file and public:  # read (or refused): the web server's copy goes at once
                forget_original_upload(file)
        cfg = config_from_request(rest)
        outcome = slot.start_or_queue(token, visitor, f"{runs.label} run on your data",
                                      lambda: runs.start(cfg, token, visitor=visitor, own=own),
                                      check=lambda: runs.start(cfg, token, visitor=visitor, own=own, check_only=True))
        return (run_starts.answer(outcome, lambda: f"Started run `{outcome.run_id}` on {len(own):,} examples "
                                  f"({own.source}); its progress shows above, its result here when it ends."), token,
                ANSWERED)

    def own_poll(token: str, seen_key):
        """The result of this browser's run once it ends: the picker lists it, selected (drawn again after a start
        answered in the box: a run that ended at once may have been drawn before that answer reached the page)."""
        if seen_key is None:  # the tab's first poll: this browser's runs listed, the newest selected (none: as built)
            ids = mine(token)
            return gr.update(choices=ids, value=ids[0]) if ids else gr.skip(), gr.skip(), ("listed",)
        run = slot.current
        if run is None or getattr(run, "data", None) is None or run.active or not run.may_control(token or ""):
            return gr.skip(), gr.skip(), seen_key
        key = (run.run_id, run.status)
        if key == seen_key:
            return gr.skip(), gr.skip(), seen_key
        ids = mine(token)
        value = run.run_id if run.run_id in ids else None
        return (gr.update(choices=ids, value=value),
                result_markdown(read_result(run.run_folder), run.run_id) if value else run.snapshot().message, key)

    @user_errors
    def own_show(run_id: str, token: str) -> str:
        if not run_id:
            return ""
        return result_markdown(read_result(runs.own_folder(run_id, token or "")), run_id)

    @user_errors
    def own_classify(text: str, run_id: str, token: str) -> str:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("Type a sentence to classify.")
        if not run_id:
            raise ValueError("Pick one of your runs first (or start one).")
        name = f"ft:{run_id}"
        own = runs.own_folder(run_id, token or "")  # theirs alone, or the same refusal as a run that is not there
        if not runs.has_model(run_id):
            raise ValueError(NO_MODEL)
        folder = runs.model(name, token or "")
        if (read_result(own) or {}).get("labels_per") == "word":
            return tagged_markdown(lab.tag(folder, text), name)  # a tag for each word
        labels, probs = lab.classify(folder, text, budget=current_budget())
        return viz.probabilities_markdown(labels, probs, name).replace("| topic |", "| label |")

    @user_errors
    def own_download(run_id: str, token: str, progress=gr.Progress()):
        """The run's model as a zip (weights in fp16), its making shown as it goes; the note says what came."""
        if not run_id:
            raise ValueError("Pick one of your runs first.")
        path = model_zip(runs.own_folder(run_id, token or ""), export_dir, run_id,
                         progress=lambda done, what: progress(done, desc=what))
        return str(path), zip_note(path)

    @user_errors
    def own_data_csv(run_id: str, token: str):
        if not run_id:
            raise ValueError("Pick one of your runs first.")
        target = export_dir / f"{run_id}-data.csv"
        shutil.copyfile(runs.own_folder(run_id, token or "") / DATA_FILE, target)
        return str(target)

    def refresh(token: str):
        return gr.update(choices=mine(token))

    example.click(lambda: (SENTIMENT_EXAMPLE, "sentence"), None, [lines, label_per], api_name="own_example",
                  api_visibility="private")
    words_example.click(lambda: (WORDS_EXAMPLE, "word"), None, [lines, label_per], api_name="own_words_example",
                        api_visibility="private")
    def own_part(request: gr.Request, token: str, seen_key):
        return own_poll(token, seen_key), False  # the run is the tab's fine-tuning run: its liveness is the tab's

    poll.after(start.click(own_start, [owner, lines, upload, text_col, label_col, hub, init, label_per],
                           [result, owner, seen], api_name="own_start", api_visibility="private"), writes=[result])
    poll.add(own_part, [owner, seen], [pick, result, seen])
    pick.change(own_show, [pick, owner], result, api_name="own_show", api_visibility="private")
    pick.focus(refresh, owner, pick, api_name="own_refresh", api_visibility="private")
    common.clear_on_refusal(classify.click(own_classify, [sentence, pick, owner], answer, api_name="own_classify",
                                           api_visibility="private"), [answer], note=answer)
    downloads.wire(download, own_download, [pick, owner], zip_file, download_note, api_name="own_download",
                   api_visibility="private")
    downloads.wire(data_csv, own_data_csv, [pick, owner], csv_file, api_name="own_data_csv", api_visibility="private")
    return result
