"""Deep links and "keep exploring": a URL or a Learn step opens a tab with a sentence (and a model or run).

``?tab=attention&text=The+cat+sat.`` opens the Attention tab with that sentence and shows it;
``&model=bert-base-uncased`` or ``&run=<run id>`` picks the model (a run's latest checkpoint);
``?tab=learn&step=loss&text=…`` opens the learning path at a step. Every value is checked like any
input (known tab and step, bounded text, a run id of safe characters; the model then goes through the
model box's own checks); a bad value is named in a warning and the page opens as usual.

A class's links open the Class tab where its user acts: the join link (``?class=CODE``) with the nickname box
ready to type in, beside Join; the teacher link (``?teacher=KEY``) at the teacher's view.

The tab is selected in the page (a click on its tab button), not by an event output: Gradio's page
refreshes the loading status of every component that has ever been an event's output, each time any
event starts or ends, and for a container output (the tabs) it walks and copies every component
inside it — the whole app, on every click of every tab, once the link had been followed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import gradio as gr

from bertdemo.learn import steps as learn_steps
from bertdemo.long_links import MAX_VALUE_CHARS, TOO_LONG
from bertdemo.models.load_errors import MAX_NAME_CHARS
from bertdemo.models.run_refs import RUN_PREFIX
from bertdemo.ui import common, first_show

if TYPE_CHECKING:
    from bertdemo.lazy import ModelSource
    from bertdemo.ui.learn_tab import LearnTab

TABS = ("learn", "tokenizer", "fill-mask", "attention", "inside", "words", "masking", "pretrain", "finetune", "class")
TEXT_BOX = {"learn": "learn-text", "tokenizer": "tok-text", "fill-mask": "fm-text", "attention": "att-text",
            "inside": "in-text", "masking": "ml-text", "words": "wic-attr-text"}  # the tab's sentence box (by elem_id)
RUN_BUTTON = {"tokenizer": "tok-run", "fill-mask": "fm-run", "attention": "att-run", "inside": "in-run",
              "masking": "ml-run", "words": "wic-attr-run"}  # what shows the tab's view for that sentence
WORDS_BOX = "in-words"  # Inside BERT's "right words" (the loss): the word a Learn step hid
# per Learn step, the part of its tab that answers it: "keep exploring" opens that accordion ("open"), clicks
# that button ("click"), sets those boxes ("set", by elem_id) and scrolls the part into view ("scroll")
FOCUS: dict[str, dict] = {
    "embeddings": {"scroll": "in-section-embeddings"},
    "order": {"open": "in-section-order"},
    "attention": {"scroll": "att-heatmap"},
    "outputs": {"scroll": "fm-plot"},
    "loss": {"open": "in-section-loss"},
    "rates": {"click": "ml-stats", "scroll": "ml-stats-plot"},
    "masks": {"click": "ml-compare", "scroll": "ml-epochs-view"},
    "nsp": {"click": "nsp-build", "scroll": "nsp-pairs"},
    "family": {"open": "in-section-anatomy"},
    "no-positions": {"open": "pt-experiments", "set": {"pt-position-embeddings": False}},
    "length": {"open": "pt-experiments", "set": {"pt-schedule": "128:0.9,512:0.1"}},
    "tiny": {"scroll": "pt-start"},
    "cls": {"scroll": "ft-new"},
    "finetune": {"scroll": "ft-start"},
    "why-pretrain": {"scroll": "ft-curves"},
    "layers": {"open": "ft-probes-box"},
    "live-run": {"scroll": "pt-curves"},  # the run's curve and its landmark lines
    # the step's left-to-right twin and its hidden word (its answer names them)
    "why-b": {"scroll": "fm-plot", "set": {"fm-second": "", "fm-targets": ""}},
}
# a class's links: the part of the Class tab each one's user acts in, scrolled to once it is laid out ("reveal"),
# and the box the cursor is put in ("type")
CLASS_TAB = "class"
CLASS_FOCUS: dict[str, dict] = {
    "class-join": {"reveal": "class-join-heading", "type": "class-nickname"},
    "class-teacher": {"reveal": "class-updated"},  # the teacher's view's first line
}
MAX_LINK_TEXT = MAX_VALUE_CHARS  # a sentence a teacher sends in a URL (a longer one is dropped at the door)
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True)
class DeepLink:
    tab: str | None = None
    text: str | None = None
    model: str | None = None
    step: str | None = None
    problems: list[str] = field(default_factory=list)  # what was refused, in words
    focus: str | None = None  # a key of CLASS_FOCUS: the part of the tab the link's user acts in


def parse_link(params: Mapping[str, str]) -> DeepLink:
    """A page's query parameters -> what to open; refused values are left out and named in ``problems``."""
    problems: list[str] = []
    tab = (params.get("tab") or "").strip().lower() or None
    if tab is not None and tab not in TABS:
        problems.append(f"unknown tab {tab[:40]!r} (tabs: {', '.join(TABS)})")
        tab = None
    text = params.get("text")
    if text is not None and (len(text) > MAX_LINK_TEXT or not text.strip()):
        problems.append(_text_refused(len(text)))
        text = None
    problems += _dropped_at_the_door(params.get(TOO_LONG) or "")
    step = (params.get("step") or "").strip() or None
    if step is not None and step.isdigit() and 1 <= int(step) <= len(learn_steps.STEP_KEYS):
        step = learn_steps.STEP_KEYS[int(step) - 1]  # the page's own numbering: "Step 2 of 22"
    if step is not None and step not in learn_steps.STEP_KEYS:
        problems.append(f"unknown step {step[:40]!r} (a number from 1 to {len(learn_steps.STEP_KEYS)}, or a step's name)")
        step = None
    if step is not None and tab is None:
        tab = "learn"
    model = (params.get("model") or "").strip() or None
    run = (params.get("run") or "").strip() or None
    if run is not None:
        if _RUN_ID.fullmatch(run):
            model = f"{RUN_PREFIX}{run}/checkpoint"
        else:
            problems.append("a run id is letters, digits, '.', '_' and '-' only")
    if model is not None and (len(model) > MAX_NAME_CHARS or any(c in model for c in "\n\r\0")):
        problems.append(f"the model name must be at most {MAX_NAME_CHARS} characters on one line")
        model = None
    focus = class_focus(params)
    if focus is not None and tab is None:
        tab = CLASS_TAB
    return DeepLink(tab, text.strip() if text else None, model, step, problems, focus if tab == CLASS_TAB else None)


def class_focus(params: Mapping[str, str]) -> str | None:
    """A class's link: ``"class-teacher"`` for a teacher link, ``"class-join"`` for a join link, else None."""
    if (params.get("teacher") or "").strip():
        return "class-teacher"
    if (params.get("class") or "").strip():
        return "class-join"
    return None


def _text_refused(chars: int) -> str:
    return f"the text must be 1 to {MAX_LINK_TEXT:,} characters (it has {chars:,})"


def _dropped_at_the_door(named: str) -> list[str]:
    """What :class:`bertdemo.long_links.LongLinks` left out of a link too long to work (``name:characters``, comma
    separated), in words."""
    problems = []
    for item in named.split(",")[:10]:
        name, _, size = item.partition(":")
        chars = int(size) if size.isdigit() else 0
        if name == "text":
            problems.append(_text_refused(chars))
        elif name == "query":
            problems.append(f"the link has {chars:,} characters, more than a link here holds; it was left out")
        elif name:
            problems.append(f"the link's {name[:40]!r} has {chars:,} characters, more than a link here holds; "
                            "it was left out")
    return problems


def opens_on_learn(link: DeepLink) -> bool:
    """Whether the page opens on the Learn tab (the first tab: no tab named, or Learn): only then does a page
    open ask for the path's first answer (ui/first_show.py; another tab's link leaves it until Learn is shown)."""
    return link.tab in (None, "learn")


def checked_model(store: ModelSource, name: str | None, offered: set[str]) -> tuple[str | None, list[str]]:
    """The link's model when it is one of the box's choices or loads here (loading it now: the box's own load
    then finds it in the store), else None and what is wrong, in words — so an unknown model or run is named
    once, by the link's warning, and the model box keeps a model that answers."""
    if name is None or name in offered:
        return name, []
    try:
        store.get(name)
    except ValueError as exc:
        return None, [f"the model {name[:80]!r} cannot be used here ({str(exc).rstrip('.')}); "
                      "the page uses the model in the Model box instead"]
    return name, []


def link_query(tab: str | None, text: str | None, model: str | None, step: str | None = None) -> str:
    """The query of a link to a view (what :func:`parse_link` reads back): its tab, its sentence, its model
    (a run's checkpoint by ``run=<id>``) and, on Learn, its step."""
    params: dict[str, str] = {}
    if tab in TABS:
        params["tab"] = tab
    if tab == "learn" and step in learn_steps.STEP_KEYS:
        params["step"] = step
    if text and text.strip():
        params["text"] = text.strip()[:MAX_LINK_TEXT]
    if model:
        run = model[len(RUN_PREFIX):].removesuffix("/checkpoint") if model.startswith(RUN_PREFIX) else ""
        if run and model.endswith("/checkpoint") and _RUN_ID.fullmatch(run):
            params["run"] = run
        else:
            params["model"] = model
    return "?" + urlencode(params)


def share_controls() -> tuple[gr.Button, gr.Textbox]:
    """The Share button and the box its link appears in (shown once pressed); build them where they show,
    then pass them to :func:`connect`."""
    button = gr.Button("Share this view", size="sm", elem_id="share-view", min_width=140)
    link = gr.Textbox(label="Link to this view (copied to the clipboard)", visible=False, interactive=False,
                      buttons=["copy"], elem_id="share-link")
    return button, link


def _share_js(text_boxes: dict[str, str]) -> str:
    """JS for the Share click: the tab on screen and its sentence (read from the page) before the model and step."""
    return ("(tab, text, ...rest) => { const boxes = " + json.dumps(text_boxes) + ";"
            " const b = [...document.querySelectorAll('button[role=tab]')].find("
            "b => b.getAttribute('aria-selected') === 'true' && b.offsetParent !== null);"
            " const id = b ? b.dataset.tabId : ''; const box = boxes[id] && document.getElementById(boxes[id]);"
            " const field = box && box.querySelector('textarea, input');"
            " return [id, field ? field.value : '', ...rest]; }")


# the share handler's query -> the full URL (this page's address), copied to the clipboard where the browser lets it
SHARE_URL_JS = ("(q) => { if (!q || !q.startsWith('?')) return q; const url = location.origin + location.pathname + q;"
                " if (navigator.clipboard) navigator.clipboard.writeText(url).catch(() => {}); return url; }")


def _wire_share(share: tuple[gr.Button, gr.Textbox], model_box: gr.Dropdown, step: gr.components.Component,
                boxes: dict[str, gr.components.Component]) -> None:
    button, link = share
    tab_now, text_now = gr.Textbox(visible=False), gr.Textbox(visible=False)  # filled by the click's JS

    def share_link(tab: str, text: str, model: str | None, step_key: str | None):
        """The link of the view on screen: its tab, that tab's sentence, the model box's model."""
        return gr.update(value=link_query(tab or None, text, model, step_key), visible=True)

    js = _share_js({t: box for t, box in TEXT_BOX.items() if box in boxes})
    button.click(share_link, [tab_now, text_now, model_box, step], link, js=js, api_visibility="private",
                 show_progress="hidden").then(None, link, link, js=SHARE_URL_JS, api_visibility="private")


def _boxes(demo: gr.Blocks) -> dict[str, gr.components.Component]:
    return {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}


KEEP_IN_VIEW_MS = 5_000  # how long a followed link keeps its answering part in view as the page grows (the first
# answers of its tab draw within it; longer, and a press made meanwhile could find the page moved under it)


def _open_js(ids: dict[str, str], tab_ids: list[str]) -> str:
    """JS ``(value, model, ...held)`` that opens the tab named in ``value.tab`` (a click on its tab button), when
    ``value.run`` clicks that tab's run button (after the sentence is in its box), then follows ``value.focus``
    (see FOCUS, CLASS_FOCUS): opens an accordion, clicks a button, scrolls the part that answers into view, puts the
    cursor in a box, and keeps that part in view while the answers above it draw (at most ``KEEP_IN_VIEW_MS``). The
    visitor's first wheel, touch move, key or pointer press ends its scrolling and opening: a learner who scrolled
    away or closed the section meanwhile is not pulled back. Returns the first-show boxes of ``tab_ids`` (``held``): the one of a tab the visitor opened
    before the link was followed is written (:func:`bertdemo.ui.first_show.follow_up_js`)."""
    returned = "shown.length === 1 ? shown[0] : shown"
    return ("(value, model, ...held) => { " + first_show.follow_up_js(tab_ids) + " const ids = " + json.dumps(ids)
            + ";" f" const tab = value && value.tab; if (!tab) return {returned};"
            " const button = [...document.querySelectorAll('button[role=tab]')].find("
            "b => b.dataset.tabId === tab && b.offsetParent !== null);"
            " if (button && button.getAttribute('aria-selected') !== 'true') button.click();"
            # a tab's content is drawn when it is first shown: wait (up to 6 s) for each element
            " const when = (id, fn, tries = 60) => { const el = id && document.getElementById(id);"
            "  if (el) fn(el); else if (id && tries) setTimeout(() => when(id, fn, tries - 1), 100); };"
            " const laidOut = (id, fn, tries = 300) => { const el = id && document.getElementById(id);"
            "  if (el && el.offsetParent !== null) fn(el);"
            "  else if (id && tries) setTimeout(() => laidOut(id, fn, tries - 1), 100); };"
            " const focus = value.focus || {};"
            # the visitor's own move (a scroll, a key, a press) ends the follow-up's tries to scroll and open: what they
            # did is never undone
            " let moved = false; const mark = () => { moved = true; };"
            " ['wheel', 'touchmove', 'keydown', 'pointerdown'].forEach(t =>"
            "  window.addEventListener(t, mark, {once: true, passive: true, capture: true}));"
            " setTimeout(() => {"
            # the run's own answer is not brought into view on a phone (static/access.js) when the link shows a part
            "  if (value.run) when(ids[tab], b => { const quiet = !!(focus.scroll || focus.open);"
            "   if (quiet) b.dataset.bdFollowed = '1'; b.click(); delete b.dataset.bdFollowed; });"
            "  when(focus.open, acc => { const open = () => { const head = acc.querySelector('.label-wrap');"
            "   if (!moved && head && !head.classList.contains('open')) head.click(); };"
            "   setTimeout(open, 100); setTimeout(open, 1000); });"  # again if the tab's first drawing closed it
            "  when(focus.click, b => b.click());"
            # a class's link: the part its user acts in, once laid out (the teacher's view after its request)
            "  laidOut(focus.reveal, el => { if (!moved) el.scrollIntoView({block: 'start'}); });"
            # the cursor is put in the box only while the visitor has not moved nor put it anywhere themselves: the
            # box is laid out up to a poll (100 ms) after it is drawn, and a Join focused and pressed meanwhile (a
            # keyboard, a screen reader) went to the nickname box instead, and was never sent
            "  laidOut(focus.type, el => { const box = el.querySelector('input, textarea');"
            "   const active = document.activeElement;"
            "   if (box && !moved && (!active || active === document.body)) box.focus({preventScroll: true}); });"
            # shown, and kept in view while the answers above it draw and push it down (on a phone the sections above
            # the loss grew 4.5 screens after the last fixed try): until the visitor moves, for at most KEEP_IN_VIEW_MS
            "  when(focus.scroll || focus.open, el => { const show = () => { if (!moved) el.scrollIntoView({block: 'start'}); };"
            "   setTimeout(show, 300); setTimeout(() => { show(); const grown = new ResizeObserver(show);"
            f"   grown.observe(document.body); setTimeout(() => grown.disconnect(), {KEEP_IN_VIEW_MS}); }}, 1200); }});"
            " }, 100); return " + returned + "; }")


def connect(demo: gr.Blocks, model_box: gr.Dropdown, learn: LearnTab, store: ModelSource,
            share: tuple[gr.Button, gr.Textbox] | None = None) -> Any:
    """Wire the URL's deep link (on page load), the Learn tab's "keep exploring" button and ``share`` (the
    controls of :func:`share_controls`) to the tabs; returns the page-load event (the model box is set by
    then: chain the model's loading to it)."""
    boxes = _boxes(demo)
    if share is not None:
        _wire_share(share, model_box, learn.step, boxes)
    text_tabs = [t for t in TEXT_BOX if TEXT_BOX[t] in boxes]
    targets = [boxes[TEXT_BOX[t]] for t in text_tabs]
    words = boxes.get(WORDS_BOX)
    settable = sorted({box for focus in FOCUS.values() for box in focus.get("set", {}) if box in boxes})
    hidden = gr.JSON(visible=False)  # {"tab", "run", "focus"}: the tab the follow-up opens, runs and shows
    outputs = [*targets, *([words] if words is not None else []), model_box, learn.step,
               *(boxes[b] for b in settable), hidden]
    if learn.shown is not None:  # the Learn tab's first answer, sent only when the page opens on that tab
        outputs.append(learn.shown)

    def updates(tab: str | None, text: str | None, word: str | None = None, model: Any = None,
                step: str | None = None, run: bool = False, focus: str | None = None, learn_shown: Any = None,
                chosen: dict[str, Any] | None = None) -> list:
        out = [gr.update(value=text) if text is not None and t in (tab, "learn" if step else None) else gr.skip()
                for t in text_tabs]
        if words is not None:  # a new sentence for Inside BERT: its own hidden word, or none (never the default's)
            out.append(gr.update(value=word or "") if tab == "inside" and text is not None else gr.skip())
        out += [model if model is not None else gr.skip(), gr.update(value=step) if step else gr.skip()]
        sets = {**FOCUS.get(focus or "", {}).get("set", {}), **(chosen or {})}  # ``chosen``: the answer's own
        out += [gr.update(value=sets[b]) if b in sets else gr.skip() for b in settable]
        out.append({"tab": tab, "run": run, "focus": FOCUS.get(focus or "") or CLASS_FOCUS.get(focus or "", {})})
        return out + ([gr.skip() if learn_shown is None else learn_shown] if learn.shown is not None else [])

    def open_link(current: str | None, request: gr.Request):
        """The page's one load handler for the model box: its choices refreshed (new checkpoints) and its
        value — the link's model, else what the box holds — set together, so nothing overwrites the link's."""
        link = parse_link(dict(request.query_params) if request is not None else {})
        choices = common.labelled_choices(store)
        named, problems = checked_model(store, link.model, {value for _, value in choices})
        problems = link.problems + problems
        if problems:  # said once, here: the model box and the view then use the model it holds
            gr.Warning("This link could not be followed in full: " + "; ".join(problems) + ".",
                       duration=None)  # stays until closed: read once the view has drawn
        model = gr.update(choices=choices, value=named or current)
        shown = first_show.shown_value(named or current) if opens_on_learn(link) else None
        return updates(link.tab, link.text, model=model, step=link.step, run=link.text is not None, focus=link.focus,
                       learn_shown=shown)

    def keep_exploring(answer: dict | None):
        if not answer:
            return updates(None, None)
        numbers = answer.get("numbers") or {}
        if answer.get("step") == "why-b" and numbers.get("mlm_model") and numbers.get("ltr_model"):
            # Fill-Mask with the step's own pair side by side: its masked twin, its left-to-right twin second
            return updates(answer["tab"], answer["tab_text"], model=numbers["mlm_model"], run=True, focus="why-b",
                           chosen={"fm-second": numbers["ltr_model"], "fm-targets": numbers.get("hidden_word", "")})
        return updates(answer["tab"], answer["tab_text"], word=answer.get("tab_words"), run=True,
                       focus=answer.get("step"))

    shown = first_show.shown_boxes(boxes)  # each deferred tab's box: the follow-up writes the one on screen
    click = _open_js(RUN_BUTTON, list(shown))
    follow = dict(inputs=[hidden, model_box, *shown.values()], outputs=list(shown.values()), js=click,
                  api_visibility="private", show_progress="hidden")
    # progress on the model box alone: the page refreshes the loading status of every component an event has shown
    # progress on at each status message of every later event, and this one writes a text box on every tab
    opened = demo.load(open_link, model_box, outputs, api_visibility="private", show_progress_on=model_box)
    opened.then(None, **follow)
    learn.open_button.click(keep_exploring, learn.raw, outputs, api_visibility="private").then(None, **follow)
    return opened
