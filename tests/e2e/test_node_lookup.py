"""The page finds a component by its id without searching its whole tree (bertdemo/frontend_patch.py NODE_LOOKUP).

The served lookup answers exactly as the framework's own search does, on random trees edited at random between
lookups (children removed, added, a subtree replaced by a copy with the same ids, the whole tree rebuilt): a
remembered node is used only while it is still in the tree. In the app (tests/e2e/test_inside.py, on the Inside BERT
page its walk has opened), one Inside BERT click, counted with V8's call counts, visits a few hundred tree nodes
instead of one search per id from the root (unpatched: 53 lookups visiting 11,555 nodes a click); the counts do not
depend on the machine's speed.
"""

from __future__ import annotations

from bertdemo.frontend_patch import NODE_LOOKUP

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

