"""The page and the docs agree: every count README.md and docs/features.md quote about the Learn path (its questions,
its stages, the concept check's misconceptions) and the right-context cloze set is the count of the source the page
reads; the README stays one short page whose tab links land on docs/features.md's headings; every module the
features page names exists. Files only: nothing is imported but the torch-free step list."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bertdemo.learn import steps

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FEATURES = ROOT / "docs" / "features.md"
README_MAX_LINES = 120

UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}
NUMBER = r"(\d[\d,]*|(?:twenty|thirty|forty|fifty)(?:-[a-z]+)?|" + "|".join(UNITS) + r")"


def _value(word: str) -> int:
    """``"22"``, ``"twenty-one"`` or ``"nine"`` as an int."""
    word = word.lower().replace(",", "")
    if word.isdigit():
        return int(word)
    tens, _, unit = word.partition("-")
    if tens in TENS:
        return TENS[tens] + (UNITS.index(unit) if unit else 0)
    return UNITS.index(word)


def _counts(text: str, noun: str) -> list[int]:
    """Every number written before ``noun`` ("22 questions", "twenty-one questions")."""
    words = r"\s+".join(re.escape(w) for w in noun.split())  # a sentence may wrap between any two words
    return [_value(m.group(1)) for m in re.finditer(NUMBER + r"\s+" + words + r"\b", text, flags=re.IGNORECASE)]


def _docs() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in (README, FEATURES)}


def test_a_number_is_read_in_digits_and_in_words():
    assert _counts("twenty-one questions, 22 questions in nine stages, 1,329 tests", "questions") == [21, 22]
    assert _counts("in nine stages", "stages") == [9]


def test_the_learn_path_count_is_the_pages():
    """The page says ``steps.path_summary()`` (counted from STEPS); the docs may say it too, never another count."""
    questions, stages = len(steps.STEPS), len(steps.stages())
    assert steps.path_summary() == f"{questions} questions in {stages} stages"
    assert steps.path_summary() in _docs()["features.md"]
    for name, text in _docs().items():
        assert set(_counts(text, "questions")) <= {questions}, name
        assert set(_counts(text, "stages")) <= {stages}, name
    # the stages the features page walks through, in the page's order
    assert " → ".join(steps.milestones()) in re.sub(r"\s+", " ", _docs()["features.md"])


def test_the_concept_check_and_the_cloze_set_counts_are_their_files():
    items = json.loads((ROOT / "bertdemo" / "learn" / "concept_check.json").read_text(encoding="utf-8"))["items"]
    cloze = [line for line in (ROOT / "data" / "right_context_cloze.tsv").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    for name, text in _docs().items():
        assert set(_counts(text, "common misconceptions")) <= {len(items)}, name
        assert set(_counts(text, "right-context cloze sentences")) <= {len(cloze)}, name
    features = _docs()["features.md"]
    assert _counts(features, "common misconceptions") and _counts(features, "right-context cloze sentences")


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_short_and_its_tab_links_land():
    readme = README.read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    anchors = {_slug(line.lstrip("#")) for line in FEATURES.read_text(encoding="utf-8").splitlines()
               if line.startswith("## ")}
    linked = re.findall(r"\(docs/features\.md#([^)]+)\)", readme)
    assert len(linked) >= 10 and set(linked) <= anchors, sorted(set(linked) - anchors)


def test_every_module_the_features_page_names_exists():
    named = set(re.findall(r"`(bertdemo/[^`\s]+)`", FEATURES.read_text(encoding="utf-8")))
    assert named and sorted(p for p in named if not (ROOT / p).exists()) == []
