"""The page finds a component by its id without searching its whole tree (bertdemo/frontend_patch.py NODE_LOOKUP),
and gives each component its events from one table (ATTACHED_EVENTS): both answer as the framework's own code does.

The served lookup answers exactly as the framework's own search does, on random trees edited at random between
lookups (children removed, added, a subtree replaced by a copy with the same ids, the whole tree rebuilt): a
remembered node is used only while it is still in the tree. In the app (tests/e2e/test_inside.py, on the Inside BERT
page its walk has opened), one Inside BERT click, counted with V8's call counts, visits a few hundred tree nodes
instead of one search per id from the root (unpatched: 53 lookups visiting 11,555 nodes a click); the counts do not
depend on the machine's speed. The events table gives every component of random pages (events with several targets,
one component twice in an event, an event with no name) the list the framework's own scan gives it.
"""

from __future__ import annotations

import re

from bertdemo import compat
from bertdemo.frontend_patch import EVENTS_BY_TARGET_JS, NODE_LOOKUP

FRAMEWORK_SEARCH = NODE_LOOKUP.edits[0][0].replace("function Z(", "function frameworkZ(").replace("Z(n,t)",
                                                                                                 "frameworkZ(n,t)")
RANDOM_EDITS = r"""
(() => {
  let seed = 12345;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  let nextId = 0;
  const make = (depth) => {
    const n = {id: nextId++, props: {}};
    if (depth > 0 && rnd() < 0.7) { n.children = []; const k = Math.floor(rnd() * 5);
                                    for (let i = 0; i < k; i++) n.children.push(make(depth - 1)); }
    return n;
  };
  const all = (n, out = []) => { out.push(n); (n.children || []).forEach(c => all(c, out)); return out; };
  let root = make(7), lookups = 0, found = 0;
  for (let round = 0; round < 2000; round++) {
    const nodes = all(root), r = rnd(), n = nodes[Math.floor(rnd() * nodes.length)];
    if (r < 0.15 && n.children && n.children.length) {  // a child replaced by a copy: the same ids, new objects
      const i = Math.floor(rnd() * n.children.length);
      n.children = n.children.slice(); n.children[i] = JSON.parse(JSON.stringify(n.children[i]));
    } else if (r < 0.25 && n.children && n.children.length) {
      n.children.splice(Math.floor(rnd() * n.children.length), 1);  // removed in place
    } else if (r < 0.35) {
      (n.children = n.children || []).push(make(3));
    } else if (r < 0.37) {
      root = JSON.parse(JSON.stringify(root));  // a re-built page
    }
    for (let q = 0; q < 20; q++) {
      const id = Math.floor(rnd() * (nextId + 5)), mine = Z(root, id), theirs = frameworkZ(root, id);
      if (mine !== theirs) return {round, id, mine: mine && mine.id, theirs: theirs && theirs.id};
      lookups += 1; found += mine ? 1 : 0;
    }
  }
  return {lookups, found};
})()
"""


def test_the_remembered_lookup_answers_as_the_frameworks_search_on_a_tree_edited_at_random(browser_page):
    page = browser_page
    page.set_content("<p>lookup</p>")
    page.add_script_tag(content=NODE_LOOKUP.edits[0][1] + FRAMEWORK_SEARCH + "window.Z = Z;")
    result = page.evaluate(RANDOM_EDITS)
    assert result.get("lookups") == 40_000, result  # every lookup agreed
    assert 10_000 < result["found"] < 40_000  # ids present and absent were both asked


RANDOM_PAGES = r"""
(() => {
  let seed = 4242;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const names = ['click', 'change', 'submit', 'select', 'tick', '', null];
  let compared = 0, nonEmpty = 0;
  for (let page = 0; page < 50; page++) {
    const ids = 1 + Math.floor(rnd() * 60), deps = [];
    for (let d = Math.floor(rnd() * 80); d > 0; d--) {
      const targets = [];
      for (let k = Math.floor(rnd() * 5); k > 0; k--)
        targets.push([Math.floor(rnd() * ids), names[Math.floor(rnd() * names.length)]]);
      deps.push({targets});
    }
    const table = TABLE(deps);
    for (let id = 0; id < ids + 2; id++) {
      const node = {id, props: {shared_props: {}}};
      frameworkFind(node, deps);
      const theirs = node.props.shared_props.attached_events, mine = (table.get(id) || []).slice();
      if (JSON.stringify(mine) !== JSON.stringify(theirs)) return {page, id, mine, theirs};
      compared += 1; nonEmpty += theirs.length ? 1 : 0;
    }
  }
  return {compared, nonEmpty};
})()
"""


def test_the_events_table_gives_each_component_the_frameworks_list_on_random_pages(browser_page):
    core = next(compat.frontend_assets().glob("core-*.js")).read_text(encoding="utf-8")
    (method,) = re.findall(r"find_attached_events\(e,t\)\{.*?return e\.props\.shared_props\.attached_events=n,e\}", core)
    page = browser_page
    page.set_content("<p>events</p>")
    page.add_script_tag(content=f"window.frameworkFind = function {method.replace('find_attached_events', '', 1)};"
                                f"window.TABLE = {EVENTS_BY_TARGET_JS};")
    result = page.evaluate(RANDOM_PAGES)
    assert "page" not in result, result  # a component whose list differs
    assert result["compared"] > 1_500 and result["nonEmpty"] > 500  # components with events and without were asked
