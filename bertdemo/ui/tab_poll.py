"""One poll per run tab (:class:`TabPoll`): the tab's parts are read when the tab is shown, then by one timer
that ticks only while the tab is shown and something it shows is live.

A run tab (Pretrain, Fine-tune) shows things that change while a run goes: its run's status and curves, the
visitor's queued run, a section's live cell. Each part adds a function to the tab's poll (:meth:`TabPoll.add`);
one request answers them all:

- the tab's ``select`` (the learner opens it, a deep link or a Learn step opens it) draws every part, so a
  page open reads none of them: a tab not shown costs the server nothing; parts added ``first`` (a status line)
  are drawn by a request of their own just before the others, so the tab reads at once and its slow parts
  (curves, run lists) follow;
- the timer (inactive at first) is started by that draw: every ``seconds`` while a part says it is live (a run
  training, preparing, paused or queued that the tab shows), else every :data:`IDLE_SECONDS`, so a tab left
  on screen with nothing live still sees a run another visitor starts (a tick that finds nothing new sends
  nothing back but the skips); a tick switches between the two when liveness changes; leaving the tab stops
  it in the page, without a request (:data:`STOP_WHEN_HIDDEN_JS`); a start or a control from the page
  (:meth:`TabPoll.after`) draws at once and sets it;
- an output whose value is the one this page was last sent is left out (the page receives nothing for it):
  a poll that brings nothing new redraws nothing;
- an event outside the poll that writes one of its outputs (a Pause's answer in the status line) is followed by
  a draw that sends those outputs whatever the poll last sent (:meth:`TabPoll.after`, ``writes``). The event's
  answer is computed before a tick that can reach the page first: the page then shows the older answer while
  the poll believes it shows the tick's, and a run that stands still from there (paused, stopped) would keep
  the older line for good ("Pausing after this step…" under a run long paused).

Parts only read: the run services answer from memory (snapshots), and every part keys its drawing on what
changed, so a tick that finds a run standing still costs a few dictionary looks.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

PartFn = Callable[..., tuple[Sequence[Any], bool]]  # (request, *inputs) -> (one value per output, live)
IDLE_SECONDS = 10.0  # a shown tab with nothing live looks again this often (a run another visitor starts)
_EVERY = "every"  # the key in a page's ``sent`` that holds the timer's interval as last sent (seconds)

# the Tabs' change, in the page alone: once the new tab is laid out, the timer stops unless its tab is shown
STOP_WHEN_HIDDEN_JS = ("async () => { await new Promise(r => setTimeout(r, 50));"
                       " const el = document.getElementById(%r);"
                       " return el && el.offsetParent !== null ? undefined : {__type__: 'update', active: false}; }")


@dataclass(frozen=True)
class _Part:
    fn: PartFn
    inputs: tuple[Any, ...]
    outputs: tuple[Any, ...]
    on_show_only: bool
    first: bool = False


def _is_skip(value: Any) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update" and len(value) == 1


def _digest(value: Any) -> str:
    return hashlib.blake2b(repr(value).encode("utf-8", "replace"), digest_size=12).hexdigest()


def unsent(values: Sequence[Any], ids: Sequence[int], sent: dict | None) -> tuple[list[Any], dict]:
    """``values`` with each one this page was last sent (``sent``: output id -> digest) replaced by a skip; the
    new ``sent``. Pure: what a poll sends, given what the page already has."""
    now = dict(sent or {})
    out = []
    for value, key in zip(values, ids):
        if _is_skip(value):
            out.append(value)
            continue
        digest = _digest(value)
        out.append(gr.skip() if now.get(str(key)) == digest else value)
        now[str(key)] = digest
    return out, now


def forget(sent: dict | None, components: Sequence[Any]) -> dict:
    """``sent`` without ``components``: an event outside the poll changed them, so the poll's next answer sends
    each of them whatever it was last sent (else the page would keep that event's value, skipped as unchanged)."""
    ids = {str(c._id) for c in components}
    return {key: digest for key, digest in (sent or {}).items() if key not in ids}


class TabPoll:
    """Build inside the tab (it makes the tab's one timer); ``shown_id``: the elem_id of an element always
    visible in the tab (the page reads it to tell whether the tab is shown). Then :meth:`add` parts and
    :meth:`wire` once."""

    def __init__(self, seconds: float, shown_id: str, idle_seconds: float = IDLE_SECONDS) -> None:
        self.timer = gr.Timer(seconds, active=False)
        self.seconds, self.idle_seconds = seconds, idle_seconds
        self.sent = gr.State({})  # output id -> digest of the value this page was last sent
        self.shown_id = shown_id
        self._parts: list[_Part] = []
        self._after: list[Any] = []
        self._shown_parts: list[_Part] = []  # set by wire
        self._wired = False
        self._viewer: Any = None
        self._viewing: Callable[[str], contextlib.AbstractContextManager] | None = None

    def follow(self, viewer: Any, viewing: Callable[[str], contextlib.AbstractContextManager]) -> None:
        """Read every part inside ``viewing(token)``, ``token`` the value of the page's ``viewer`` component (its
        owner token): with several runs at once, the run services then answer with this page's own run."""
        self._viewer, self._viewing = viewer, viewing

    def add(self, fn: PartFn, inputs: Sequence[Any], outputs: Sequence[Any], *, on_show_only: bool = False,
            first: bool = False) -> None:
        """A part: ``fn(request, *inputs)`` returns one value per output (``gr.skip()`` for none) and whether
        what it shows is live; ``on_show_only``: drawn when the tab is shown, not at each tick (e.g. an estimate
        the form's own changes redraw); ``first``: drawn when the tab is shown by a request of its own, before
        the other parts (a cheap line the learner reads first; never at a tick, and it starts no timer)."""
        self._parts.append(_Part(fn, tuple(inputs), tuple(outputs), on_show_only or first, first))

    def _handler(self, parts: list[_Part], ticking: bool, timed: bool = True,
                 forced: Sequence[Any] = ()) -> tuple[Callable, list, list]:
        inputs = [c for p in parts for c in p.inputs]
        outputs = [c for p in parts for c in p.outputs]
        ids = [c._id for c in outputs]

        viewing, follows = self._viewing, self._viewer is not None

        def tab_poll(sent: dict, request: gr.Request, *values: Any):
            out: list[Any] = []
            live, at = False, 0
            token, values = (str(values[0] or ""), values[1:]) if follows else ("", values)
            with viewing(token) if viewing is not None else contextlib.nullcontext():
                for part in parts:
                    drawn, part_live = part.fn(request, *values[at:at + len(part.inputs)])
                    at += len(part.inputs)
                    out.extend(drawn)
                    live = live or part_live
            out, sent = unsent(out, ids, forget(sent, forced) if forced else sent)
            if not timed:  # the first parts' own request: the timer is the rest's to set
                return (*out, sent)
            every = self.seconds if live else self.idle_seconds
            if ticking and sent.get(_EVERY) == every:  # a tick runs only while the timer is on, at that pace
                timer = gr.skip()
            else:
                timer = gr.update(value=every, active=True)
            return (*out, {**sent, _EVERY: every}, timer)

        # the api names ui/heavy_requests.py declares
        tab_poll.__name__ = "tab_tick" if ticking else "tab_shown" if timed else "tab_first"
        tab_poll.drawn_again = tuple(c._id for c in forced)  # the outputs it sends whatever was sent before
        viewer = [self._viewer] if follows else []
        return tab_poll, [self.sent, *viewer, *inputs], [*outputs, self.sent, *([self.timer] if timed else [])]

    def wire(self, tab: gr.Tab) -> None:
        """The tab's select draws every part and starts (or stops) the timer; the timer's tick draws the parts
        that poll; the page's Tabs stop the timer when another tab is shown."""
        if self._wired:
            raise RuntimeError("a tab's poll is wired once")
        self._wired = True
        first = [p for p in self._parts if p.first]
        self._shown_parts = [p for p in self._parts if not p.first]  # what a select draws (the first parts before it)
        shown, shown_inputs, shown_outputs = self._handler(self._shown_parts, ticking=False)
        self._on_show, self._show_inputs, self._show_outputs = shown, shown_inputs, shown_outputs
        tick, tick_inputs, tick_outputs = self._handler([p for p in self._parts if not p.on_show_only], ticking=True)
        quiet = dict(api_visibility="private", show_progress="hidden", show_progress_on=[])
        if first:  # the cheap parts answer first, the rest right after
            tab.select(*self._handler(first, ticking=False, timed=False), **quiet).then(
                shown, shown_inputs, shown_outputs, **quiet)
        else:
            tab.select(shown, shown_inputs, shown_outputs, **quiet)
        self.timer.tick(tick, tick_inputs, tick_outputs, **quiet)
        tabs = getattr(tab, "parent", None)
        if isinstance(tabs, gr.Tabs):
            tabs.change(None, None, self.timer, js=STOP_WHEN_HIDDEN_JS % self.shown_id, api_visibility="private",
                        show_progress="hidden")
        for event, writes in self._after:
            self._chain(event, writes)

    def after(self, event: Any, writes: Sequence[Any] = ()) -> None:
        """Draw every part once ``event`` (a start or a control from the page) has run, and start the timer if
        live (chained when the poll is wired: a section may name its start before the tab has all its parts).
        ``writes``: the poll's outputs the event answers in itself; the draw sends them again whatever the poll
        last sent (see the module's docstring). A part must compute them at every draw for that (a part that
        keys its own drawing on what changed leaves them out of the key)."""
        self._after.append((event, tuple(writes)))
        if self._wired:
            self._chain(event, tuple(writes))

    def _chain(self, event: Any, writes: tuple[Any, ...] = ()) -> None:
        handler = self._on_show
        if writes:
            owned = {c._id for c in self._show_outputs}
            strays = [c for c in writes if c._id not in owned]
            if strays:
                raise ValueError(f"an event writes {len(strays)} component(s) this poll does not draw")
            handler, _, _ = self._handler(self._shown_parts, ticking=False, forced=writes)
        event.then(handler, self._show_inputs, self._show_outputs, api_visibility="private",
                   show_progress="hidden", show_progress_on=[])
