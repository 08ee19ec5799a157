"""axe-core in the page: the blocking violations (critical, serious, and headings out of order) of the page as it is,
and any id written on more than one element.

axe-core is vendored (tests/e2e/vendor/axe.min.js, MPL-2.0: axe-core.LICENSE beside it), so no npm at test time.
The tests that perform a tab's main action (a run started and its curve drawn, a class made and its teacher's
view open) check the page they made with :func:`axe_at_both_widths`, so no test starts a run only to check it.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

from .conftest import screenshot
from .pages import NONE_PENDING, RUN_TIMEOUT_MS, resize

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
ORDER_RULES = ("heading-order", "page-has-heading-one")  # headings in order (axe calls these moderate)
WIDTHS = ((1280, 1000), (390, 844))  # desktop, and a phone

# and an id written on two elements (a label's "for", a link to "#id", a script's getElementById find only the first;
# axe's own duplicate-id rules are deprecated, so counted here)
VIOLATIONS_JS = """async (rules) => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  const seen = {};
  document.querySelectorAll('[id]').forEach(e => { if (e.id) seen[e.id] = (seen[e.id] || 0) + 1; });
  return result.violations
    .filter(v => ['critical', 'serious'].includes(v.impact) || rules.includes(v.id))
    .map(v => `${v.id} (${v.impact}): ` + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '))
    .concat(Object.keys(seen).filter(id => seen[id] > 1).map(id => `duplicate id: ${id} (${seen[id]} elements)`));
}"""

# nothing on screen is still fading in or out (gradio dims an output while its event runs: .pending, then a 0.15 s
# transition back), so colours are measured as they settle
# no progress left, no transition running, and the page's accessibility pass done with what changed last
# (bertdemo/ui/static/access.js: a table that began to scroll at a phone's width gets its Tab stop there)
SETTLED_JS = "() => " + NONE_PENDING + """
  && !document.getAnimations().some(a => a instanceof CSSTransition && a.playState === 'running')
  && document.documentElement.getAttribute('data-bd-tidy') !== 'pending'"""


def load_axe(page: Page) -> None:
    """axe-core in the page (once per document)."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))


def axe_violations(page: Page) -> list[str]:
    """The page's blocking violations once it has settled, one line each: rule (impact): the first nodes."""
    page.wait_for_function(SETTLED_JS, timeout=RUN_TIMEOUT_MS)
    load_axe(page)
    return page.evaluate(VIOLATIONS_JS, list(ORDER_RULES))


def axe_at_both_widths(page: Page, name: str, back_to: tuple[int, int] | None = (1280, 1000)) -> dict[str, list[str]]:
    """{"<name> @<width>": violations} of the page as it is, at 1280 px and at 390 px (a screenshot of each); the
    viewport is set back to ``back_to`` after (None: left at the phone's width)."""
    found = {}
    for width, height in WIDTHS:
        resize(page, width, height)
        found[f"{name} @{width}"] = axe_violations(page)
        screenshot(page, f"accessibility_{name}_{width}")
    if back_to is not None:
        resize(page, *back_to)
    return found
