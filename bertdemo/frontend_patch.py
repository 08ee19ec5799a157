"""Fixes to the web framework's page scripts, applied as they are served (:class:`FrontendPatch`, ASGI).

Seven fixes. :data:`STATUS_PASS`: at every status message of every event (about ten a click) the framework's
page pushes the loading status of *every* component that any event of the page has shown progress on into its
component tree again, each push a search of the whole tree from its root plus a walk of the component's own
subtree — although only the statuses of the event that sent the message changed. The work grows with every
tab a learner has used: 13,500 tree nodes visited per Tokenizer click on a fresh page, 63,000 once the six
Explore tabs have run (``docs/lab/benchmarks.md``). The fix pushes a status only when it differs from the one this
page last pushed for that component (compared by value); any other write of a component's loading status
(a validation message, a cleared status) forgets what was pushed for it, so the next pass pushes again, and a
re-built page forgets everything.

:data:`NODE_LOOKUP`: the page finds a component in its tree by its id with a search from the root, one for each
input it reads and each output it updates: 53 searches visiting 11,555 tree nodes for one Inside BERT click,
10–20 ms of the page's CPU before the click's request leaves and after its answer comes. The fix remembers where
each id was found (one walk of the tree fills the table) and checks that the remembered node is still in the
tree (each of its parents still holds it, up to the root) before it answers with it; a node not remembered, or no
longer in the tree, is searched for as before, and a search that finds it walks the tree again.

:data:`ATTACHED_EVENTS`: when it builds the page, the framework gives every component the list of events attached
to it by scanning every event's targets once per component: 807 components × 244 events on this app, ~0.7–1.3 s of
a page open's CPU (with the proxies the page's state reads go through). The fix reads the events' targets once into
a table (component id → its events, in the events' order, each event's first target for that component), then
gives each component its list from the table: the same lists (tests/e2e/test_node_lookup.py compares them on random
pages), once per page build instead of once per component.

:data:`LATEST_ANSWER`: two events of one page that write the same component (a tab's first answer, drawn when
the tab is shown, and the visitor's own click a moment later; a poll and a button) are answered in whatever order
the server finishes them, and the framework draws each answer as it comes: a first answer that came last drew the
example sentence's tokens under the visitor's own sentence (tests/e2e/test_latest_answer.py holds it back to show
it). The fix numbers each request as the page sends it and remembers, for each component, the number of the
answer drawn in it; an answer to an older request leaves that component alone (its other components, which no
newer answer has written, are drawn). A skip (``gr.skip()``: an update with no value) writes nothing and claims
nothing. A streamed answer counts as new at each message it draws, so a stream that
began before a click still shows its later messages. Answers made in the page alone (an event's own script) are
drawn as before. A ``gr.State`` is kept on the server, where an older answer still writes it: an event whose answer
feeds a State checks its own order there (the Learn tab's ``draw_step`` reads the step box).

:data:`TOAST_TEXT`: the framework renders a toast's message (``gr.Error``, ``gr.Warning``) as HTML, through its
sanitizer, and the same message is what an API caller reads: a refusal written for the toast with its ``<`` as an
entity ("label&lt;TAB&gt;text") reached every REST and client caller that way, and one written plain lost its
``<TAB>`` on the page. The fix writes the message's characters as entities in the page, so the server sends plain
text to both: the page shows it as written, a caller reads it as written.

:data:`DONE_ANNOUNCED`: when an event finishes, the page tells a screen reader so in a live region, with the text of
the translation key ``common.complete``, which the framework's English table does not hold: a screen reader read out
"common.complete" after every click. The fix announces "Complete" (the table's ``common.error`` reads "Error").

:data:`PRESS_KEPT`: an event whose trigger mode is "always_last" (every event that answers a box's text:
:mod:`bertdemo.ui.latest_input`) keeps a press made while it is pending and sends it when the pending request
completes. Three faults: it sent the press's whole trigger again, so every event on that trigger ran once more
(and two kept events on one trigger would send each other again at each completion); when the pending request
failed (a refused sentence) it dropped the kept press, so Enter on a new sentence, pressed while the refusal of the
one before was on its way, was never answered; and it showed that refusal over the newer answer. The fix sends the
kept event alone, after a failure too, and does not show a failure's message when a newer press waits.

Each edit names the exact text it replaces, found exactly once in the file of the pinned framework version
(``bertdemo/compat.py`` lists the touchpoint; ``tests/test_frontend_patch.py`` checks the installed file). When
a text is missing (another framework version), :func:`patched_scripts` leaves that file alone and says so: the
page then runs as the framework wrote it (slower, a late answer drawn as it comes), never broken. Standard library
only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bertdemo.page_cache import run_capturing

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]

ASSETS_ROUTE = "/assets/"  # where the framework serves its built files
PASS_HEADERS = (b"accept-encoding", b"range", b"if-none-match", b"if-modified-since")  # the answer is always whole
DROP_HEADERS = (b"content-length", b"etag", b"last-modified")  # of the file as it lies on disk

log = logging.getLogger("bertdemo")


@dataclass(frozen=True)
class ScriptPatch:
    """Edits of one of the framework's script files: ``(exact text, replacement)``, each text found once."""

    name: str
    file_glob: str
    edits: tuple[tuple[str, str], ...]


STATUS_PASS = ScriptPatch(
    name="push a loading status only when it changed",
    file_glob="Blocks-*.js",
    edits=(
        ("async update_loading_stati_state(){await Promise.all(Object.entries(this.loading_stati.current)"
         ".map(([e,t])=>this.update_state_cb(Number(e),{loading_status:t},!1)))}",
         "async update_loading_stati_state(){const s=this.__pushed||(this.__pushed=new Map),w=[];"
         "for(const[e,t]of Object.entries(this.loading_stati.current)){const k=JSON.stringify(t);"
         "if(s.get(e)===k)continue;w.push(this.update_state_cb(Number(e),{loading_status:t},!1));s.set(e,k)}"
         "await Promise.all(w)}"
         "__forget_pushed(a){const p=a[1];p&&typeof p==`object`&&`loading_status`in p&&this.__pushed"
         "&&this.__pushed.delete(String(a[0]))}"),
        # every other write of a loading status (both places the page's update function is set) forgets the push
        ("this.update_state_cb=n,this.get_state_cb=r",
         "this.update_state_cb=(...a)=>(this.__forget_pushed(a),n(...a)),this.get_state_cb=r"),
        ("this.update_state_cb=t,this.get_state_cb=n",
         "this.update_state_cb=(...a)=>(this.__forget_pushed(a),t(...a)),this.get_state_cb=n"),
        ("reload(e,t,n,r,i){", "reload(e,t,n,r,i){this.__pushed=new Map;"),  # a re-built page: push everything
    ),
)
NODE_LOOKUP = ScriptPatch(
    name="find a component by its id without searching the whole tree",
    file_glob="core-*.js",
    edits=(
        ("function Z(e,t){if(e.id===t)return e;if(e.children)for(let n of e.children){let e=Z(n,t);if(e)return e}"
         "return null}",
         # __bdNodes: root -> {ids: id -> node (the first in the framework's own search order), up: node -> parent}
         "const __bdNodes=new WeakMap;"
         "function __bdScan(e){const i=new Map,p=new WeakMap,s=[e];while(s.length){const n=s.pop();"
         "i.has(n.id)||i.set(n.id,n);const c=n.children;if(c)for(let k=c.length-1;k>=0;k--){p.set(c[k],n);"
         "s.push(c[k])}}__bdNodes.set(e,{i,p})}"
         "function __bdSearch(e,t){if(e.id===t)return e;if(e.children)for(let n of e.children){let e=__bdSearch(n,t);"
         "if(e)return e}return null}"
         "function Z(e,t){if(e.id===t)return e;const m=__bdNodes.get(e),n=m&&m.i.get(t);if(n&&n.id===t){"
         "let c=n,ok=!0;while(c!==e){const p=m.p.get(c);if(!p||!p.children||!p.children.includes(c)){ok=!1;break}"
         "c=p}if(ok)return n}const f=__bdSearch(e,t);f&&__bdScan(e);return f}"),
    ),
)
# deps -> Map(component id -> [event names]): for each event in order, its first target of each component id
EVENTS_BY_TARGET_JS = ("(t=>{const m=new Map;for(const d of t){const s=new Set;for(const[i,v]of d.targets){"
                       "if(s.has(i))continue;s.add(i);if(!v)continue;const a=m.get(i);a?a.push(v):m.set(i,[v])}}"
                       "return m})")
ATTACHED_EVENTS = ScriptPatch(
    name="give each component its events from one table, not a scan of every event per component",
    file_glob="core-*.js",
    edits=(
        ("e=>this.find_attached_events(e,this.#n),",
         "(m=>e=>(e.props.shared_props.attached_events=(m.get(e.id)||[]).slice(),e))"
         f"({EVENTS_BY_TARGET_JS}(this.#n)),"),
    ),
)
LATEST_ANSWER = ScriptPatch(
    name="draw an answer in a component only when no newer request's answer is drawn there",
    file_glob="Blocks-*.js",
    edits=(
        # each request numbered as it leaves (__bdNext); its answer drawn with that number, renewed at each message
        ("this.add_to_api_calls({fn_index:r.id,data:n,event_data:e.event_data,trigger_id:l});"
         "let t=await r.run(this.client,n,e.event_data,l);",
         "let __q=this.__bdNext();"
         "this.add_to_api_calls({fn_index:r.id,data:n,event_data:e.event_data,trigger_id:l});"
         "let t=await r.run(this.client,n,e.event_data,l);"),
        ("if(s.type===`data`&&await this.handle_data(r.outputs,s.data),s.type===`status`)",
         "if(s.type===`data`&&(await this.handle_data(r.outputs,this.__bdFresh(r.outputs,s.data,__q)),"
         "__q=this.__bdNext()),s.type===`status`)"),
        # __bdSeq: the last number given; __bdApplied: component id -> the number of the request whose answer it
        # shows; an older one's value is left out (undefined: the framework's "no value" for that component). A
        # skip (an update with no value: gr.skip()) writes nothing, so it claims nothing: a newer request's skip
        # that came first left the status line on "Loading the model…" when the older request's status came after
        ("async handle_data(e,t){",
         "__bdNext(){return this.__bdSeq=(this.__bdSeq||0)+1}"
         "__bdFresh(o,d,q){if(!Array.isArray(d))return d;const m=this.__bdApplied||(this.__bdApplied=new Map);"
         "return d.map((v,i)=>{if(v===void 0||(v&&v.__type__===`update`&&!(`value`in v)))return v;"
         "if((m.get(o[i])||0)>q)return void 0;m.set(o[i],q);return v})}"
         "async handle_data(e,t){"),
    ),
)
TOAST_TEXT = ScriptPatch(
    name="show a toast's message as text, never as markup",
    file_glob="statustracker-*.js",
    edits=(
        # the toast's message went through the framework's HTML sanitizer into innerHTML; now its characters are
        # written as entities first, so "label<TAB>text" or "<img src=x>" shows as written
        ("ie(s,()=>le(w(n).message||v[t.type]),!0)",
         "ie(s,()=>String(w(n).message||v[t.type]).replace(/&/g,`&amp;`).replace(/</g,`&lt;`)"
         ".replace(/>/g,`&gt;`),!0)"),
    ),
)
DONE_ANNOUNCED = ScriptPatch(
    name="announce a finished event as 'Complete', not as the missing translation key 'common.complete'",
    file_glob="statustracker-*.js",
    edits=(
        # the page's screen-reader announcement of a finished event reads a translation the framework's English
        # table lacks (it has common.error, common.loading), so the key itself was read out after every click
        ("_(t.i18n(`common.complete`),t.status.fn_index)", "_(`Complete`,t.status.fn_index)"),
    ),
)
AGAIN = "this.queue.has(r.id)&&(this.queue.delete(r.id),this.dispatch({...e,type:`fn`,fn_index:r.id}))"
PRESS_KEPT = ScriptPatch(
    name="send a press kept while its event was pending, that event alone, after a failure too; no stale refusal",
    file_glob="Blocks-*.js",
    edits=(
        # a press of an "always_last" event while it is pending is kept (the queue of deferred events) and sent when
        # the pending request completes, as the press's trigger again: every event on that trigger ran once more
        # (two kept events on one trigger would send each other again at each completion). The kept event alone now
        ("this.queue.has(r.id)&&(this.queue.delete(r.id),this.dispatch(e));return}", AGAIN + ";return}"),
        ("this.queue.has(r.id)&&(this.queue.delete(r.id),this.dispatch(e))}}catch{", AGAIN + "}}catch{"),
        # and a pending request that failed dropped the kept press: the page never answered the sentence the
        # learner had sent after a refused one. Sent now after a failure as after a success
        ("c&&this.clear_submission(r.id,c),o.forEach(e=>{this.dispatch({type:`fn`,fn_index:e,event_data:null,"
         "target_id:l})})}",
         "c&&this.clear_submission(r.id,c),o.forEach(e=>{this.dispatch({type:`fn`,fn_index:e,event_data:null,"
         "target_id:l})})," + AGAIN + "}"),
        # and the failed request's message is not shown then: it is about an input the learner has already replaced
        # (the press that replaced it closed the errors before it; this one came after, over the newer answer)
        ("throw this.log_cb(s?._title??`Error`,a||``,o,`error`,c.duration,c.visible),Error(`Dependency function failed`)",
         "throw this.queue.has(r.id)||this.log_cb(s?._title??`Error`,a||``,o,`error`,c.duration,c.visible),"
         "Error(`Dependency function failed`)"),
    ),
)
PATCHES: tuple[ScriptPatch, ...] = (STATUS_PASS, NODE_LOOKUP, ATTACHED_EVENTS, LATEST_ANSWER, TOAST_TEXT,
                                    DONE_ANNOUNCED, PRESS_KEPT)


class PatchMissing(LookupError):
    """The text an edit replaces is not in the framework's file (another version)."""


def apply_patch(text: str, patch: ScriptPatch) -> str:
    """``text`` with ``patch``'s edits made; :class:`PatchMissing` when a text is absent or found twice."""
    for old, new in patch.edits:
        found = text.count(old)
        if found != 1:
            raise PatchMissing(f"{patch.name}: {old[:60]!r}… found {found} times, expected once")
        text = text.replace(old, new)
    return text


def patched_scripts(assets_dir: Path, patches: tuple[ScriptPatch, ...] = PATCHES) -> dict[str, bytes]:
    """File name → patched bytes, for each patch whose file is found and whose edits all apply; a patch that
    does not apply is logged and left out (the file is then served as it is)."""
    out: dict[str, bytes] = {}
    for patch in patches:
        files = sorted(Path(assets_dir).glob(patch.file_glob))
        try:
            if len(files) != 1:
                raise PatchMissing(f"{patch.name}: {len(files)} files match {patch.file_glob}, expected one")
            text = (out.get(files[0].name) or files[0].read_bytes()).decode("utf-8")  # an earlier patch's text
            out[files[0].name] = apply_patch(text, patch).encode("utf-8")
        except PatchMissing as err:
            log.warning("The page runs without the fix %s", err)
    return out


class FrontendPatch:
    """ASGI middleware: a ``GET`` of a patched script (``scripts``: file name → bytes) is answered with the
    framework's own answer (its status and headers) carrying the patched bytes, whole and uncompressed (an outer
    :class:`~bertdemo.asset_cache.AssetCache` compresses and keeps it); everything else passes through."""

    def __init__(self, app: ASGIApp, scripts: dict[str, bytes]) -> None:
        self.app = app
        self.paths = {ASSETS_ROUTE + name: body for name, body in scripts.items()}

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        body = self._patched(scope)
        if body is None:
            await self.app(scope, receive, send)
            return
        plain = {**scope, "headers": [(k, v) for k, v in scope.get("headers") or [] if k.lower() not in PASS_HEADERS]}

        async def swap(start: dict, _disk: bytes) -> None:
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in DROP_HEADERS]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await run_capturing(self.app, plain, receive, send, swap)

    def _patched(self, scope: Scope) -> bytes | None:
        if scope.get("type") != "http" or scope.get("method") != "GET":
            return None
        path, root = scope.get("path", ""), scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        return self.paths.get(path)
