"""The page finds a component by its id without searching its whole tree (bertdemo/frontend_patch.py NODE_LOOKUP).

Two checks in the browser. The served lookup answers exactly as the framework's own search does, on random trees
edited at random between lookups (children removed, added, a subtree replaced by a copy with the same ids, the
whole tree rebuilt): a remembered node is used only while it is still in the tree. And in the app, one Inside
BERT click, counted with V8's call counts, visits a few hundred tree nodes instead of one search per id from the
root (unpatched: 53 lookups visiting 11,555 nodes a click); the counts do not depend on the machine's speed.
"""

from __future__ import annotations

from bertdemo.frontend_patch import NODE_LOOKUP

from .pages import RUN_TIMEOUT_MS, open_app, open_tab, wait_idle

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


def _calls(cdp, names: tuple[str, ...]) -> int:
    result = cdp.send("Profiler.takePreciseCoverage")["result"]
    return sum(f["ranges"][0]["count"] for script in result if "/assets/core-" in script["url"]
               for f in script["functions"] if f["functionName"] in names)


def test_an_inside_bert_click_looks_its_components_up_without_walking_the_tree(browser_page, app_url):
    from playwright.sync_api import expect

    page = browser_page
    open_app(page, app_url)
    open_tab(page, "Inside BERT")
    expect(page.locator("#in-emb-info")).to_contain_text("Model", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.startPreciseCoverage", {"callCount": True, "detailed": False})
    try:
        visits = []
        for word in ("river", "street", "bridge"):
            _calls(cdp, ("Z", "__bdSearch"))
            page.locator("#in-text textarea").fill(f"The dog did not cross the {word} because it was too [MASK].")
            page.click("#in-run")
            expect(page.locator("#in-emb-info")).to_contain_text(word, timeout=RUN_TIMEOUT_MS)
            wait_idle(page)
            visits.append(_calls(cdp, ("Z", "__bdSearch")))
    finally:
        cdp.send("Profiler.stopPreciseCoverage")
    # a lookup is one call of Z, and each node a search visits one more call (the search is recursive):
    # unpatched, a click made about 11,500 calls
    assert max(visits) < 1_000, visits
