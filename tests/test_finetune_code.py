""""Show the code" for fine-tuning runs as written: it builds the app's own split, fine-tunes, classifies."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from bertdemo.corpus.topics import load_topic_splits
from bertdemo.finetune.config import FinetuneConfig
from bertdemo.snippets.finetune import finetune_code


def test_the_snippet_builds_the_apps_split_and_fine_tunes(tiny_mlm_dir, tmp_path):
    hostile = 'x")\nimport os; os.system("echo owned")  # \r'
    code = finetune_code(str(tiny_mlm_dir), FinetuneConfig(epochs=0.05, probe_text=hostile, time_budget_s=0))
    assert compile(code, "snippet", "exec")
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, namespace)  # noqa: S102 - the test runs the page's code as a learner would
    app = load_topic_splits(Path(tmp_path) / "cache")
    assert list(namespace["val"]["text"]) == list(app["validation"]["text"])
    assert list(namespace["train"]["label"]) == list(app["train"]["label"])
    assert namespace["step"] == int(0.05 * (len(app["train"]) // 32))
    printed = out.getvalue().splitlines()
    assert printed[0].startswith("step 0: sample accuracy ") and "owned" not in out.getvalue()
    assert printed[1] == f"ended by the planned steps at step {namespace['step']} of {namespace['step']}"
    assert printed[2].startswith("validation accuracy ") and "(whole split), test accuracy " in printed[2]


def test_the_snippet_ends_where_the_views_time_budget_ends_it(tiny_mlm_dir):
    """The view's run stops at its time budget (evaluations included); the snippet trained all planned steps.
    A budget shorter than the starting evaluation ends it before the first step, as it ends the view's run."""
    code = finetune_code(str(tiny_mlm_dir), FinetuneConfig(epochs=1, time_budget_s=0.001))
    assert "BUDGET = 0.001" in code
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, namespace)  # noqa: S102
    assert namespace["step"] == 0 and namespace["ended"] == "time budget"
    assert f"ended by the time budget at step 0 of {namespace['steps']}" in out.getvalue()


def test_the_tabs_code_panel_reads_the_forms_values_in_their_order(tmp_path):
    """The panel paired the form's values with the wrong names (the batch size became the learning rate)."""
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    demo = build_app(AppContext.for_tests(tmp_path))
    show_code = next(f.fn for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "show_code")
    code = show_code("random", 1e-4, 16, 2.0, 95, 7, "A violin.")
    assert "BUDGET = 95.0" in code  # the view's time budget, reproduced
    assert "lr=0.0001" in code and "batches(train, 16, " in code and "torch.manual_seed(7)" in code
    assert "BertForSequenceClassification(model.config)" in code and "'A violin.'" in code
