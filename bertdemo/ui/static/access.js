// The page for a keyboard, a screen reader and a phone (bertdemo/ui/access.py puts this file in the page's
// head, after window.BERTDEMO_ACCESS = {answers: {button id: answer selector}, names: {selector: name}, narrow: px}). What it does,
// and why, is listed in access.py's docstring. It reaches gradio's own markup (role=tablist/tab/listbox,
// .empty, .image-container, button.upload-container, [data-testid=block-label], .toast-header: checked on gradio 6.31;
// tests/e2e/test_accessibility.py and test_deep_link_markup.py fail when one stops applying).
(function () {
  "use strict";
  var SETTINGS = window.BERTDEMO_ACCESS || { answers: {}, names: {}, narrow: 640 };
  // a figure's twin lists at most this many heatmap numbers, all its heatmaps together; beyond, each heatmap is
  // summarised by the largest value of each row. The twin is laid out like any table, at every draw: Inside BERT's
  // five embedding strips (about 5,100 cells) cost the page 140-180 ms a click in forced layout.
  var MAX_CELLS = 1000;
  var MAX_SERIES_CELLS = 4000;  // a bar or line series' table; a longer one is summarised (first, last, extremes)

  function shown(el) { return !!el && el.offsetParent !== null; }
  function tabsOf(list) {
    return Array.prototype.filter.call(list.querySelectorAll("[role=tab]"), function (t) {
      return !t.disabled && shown(t) && t.closest("[role=tablist]") === list;
    });
  }

  // --- the tab list: the ARIA tabs pattern -------------------------------------------------------------
  document.addEventListener("keydown", function (ev) {
    var tab = ev.target && ev.target.closest ? ev.target.closest("[role=tab]") : null;
    if (!tab || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var list = tab.closest("[role=tablist]");
    if (!list) return;
    var tabs = tabsOf(list), i = tabs.indexOf(tab), next = null;
    if (i < 0) return;
    if (ev.key === "ArrowRight") next = tabs[(i + 1) % tabs.length];
    else if (ev.key === "ArrowLeft") next = tabs[(i - 1 + tabs.length) % tabs.length];
    else if (ev.key === "Home") next = tabs[0];
    else if (ev.key === "End") next = tabs[tabs.length - 1];
    if (!next) return;
    ev.preventDefault();
    next.focus();
    if (next.getAttribute("aria-selected") !== "true") next.click();  // automatic activation
  });

  function rovingTabs() {  // only the open tab is a Tab stop
    document.querySelectorAll("[role=tablist]").forEach(function (list) {
      var tabs = tabsOf(list);
      var open = tabs.filter(function (t) { return t.getAttribute("aria-selected") === "true"; })[0] || tabs[0];
      tabs.forEach(function (t) {
        var want = t === open ? "0" : "-1";
        if (t.getAttribute("tabindex") !== want) t.setAttribute("tabindex", want);
      });
    });
  }

  // --- names and focus stops gradio's markup lacks -----------------------------------------------------
  function unfocusable(list) {
    if (list.getAttribute("tabindex") !== "-1") list.setAttribute("tabindex", "-1");
  }
  // at once, in the observer's callback (a list opens on focus, a Tab may follow at once), and only in what was
  // added: the callback runs at every change of the page, many times a click
  function listboxes(records) {
    for (var i = 0; i < records.length; i++) {
      var added = records[i].addedNodes;
      for (var j = 0; j < added.length; j++) {
        var node = added[j];
        if (node.nodeType !== 1) continue;
        if (node.getAttribute("role") === "listbox") unfocusable(node);
        if (node.firstElementChild) node.querySelectorAll("[role=listbox]").forEach(unfocusable);
      }
    }
  }
  function textIn(el) { return el ? el.textContent.replace(/\s+/g, " ").trim() : ""; }
  function setName(el, text) { if (text && el.getAttribute("aria-label") !== text) el.setAttribute("aria-label", text); }
  function names() {
    // an empty box (a file, a picture, JSON not made yet): gradio's "Empty value" on a bare div, read as a picture
    // named by its box's label
    document.querySelectorAll(".empty[aria-label]").forEach(function (el) {
      if (!el.hasAttribute("role")) el.setAttribute("role", "img");
      var block = el.closest(".block"), label = textIn(block && block.querySelector("[data-testid=block-label]"));
      if (label) setName(el, label + ": empty");
    });
    Object.keys(SETTINGS.names || {}).forEach(function (selector) {
      document.querySelectorAll(selector).forEach(function (el) { setName(el, SETTINGS.names[selector]); });
    });
    // a toast's header is a button (it folds the messages) that holds the close button: a control inside a control,
    // which a screen reader cannot tell apart (axe: nested-interactive). The close button stays the one control; the
    // header still folds at a click (the messages show unfolded)
    document.querySelectorAll(".toast-header[role=button]").forEach(function (header) {
      if (!header.querySelector("button")) return;
      header.removeAttribute("role");
      header.removeAttribute("tabindex");
    });
    // a text box with a copy button (the Class tab's links, the shared view's link): gradio puts the button first inside
    // the box's <label>, so the label names the button and the text box is read out with no name. It takes the
    // label's text
    document.querySelectorAll("label:has(> .icon-button-wrapper button) textarea, "
                              + "label:has(> .icon-button-wrapper button) input").forEach(function (box) {
      setName(box, textIn(box.closest("label").querySelector("[data-testid=block-info]")));
    });
    // a JSON viewer's line numbers (CSS content) were read out inside the data: "{ 8 "layer" : 0 , 9"
    document.querySelectorAll(".json-node .line-number:not([aria-hidden])").forEach(function (n) {
      n.setAttribute("aria-hidden", "true");
    });
    document.querySelectorAll("button.upload-container").forEach(function (button) {
      setName(button, button.innerText.replace(/\s+/g, " ").trim());
    });
    // an Examples table is a grid with no name ("Examples" is a line of text above it)
    document.querySelectorAll("table[role=grid]").forEach(function (grid) {
      var block = grid.closest(".block"), label = textIn(block && block.querySelector(".label"));
      if (label) setName(grid, label + ": a row fills the boxes above");
    });
    // a file box's links read as their size ("2.5 KB ⇣"): each says which file it downloads
    document.querySelectorAll("tr.file a.download-link").forEach(function (link) {
      var file = link.closest("tr").querySelector(".filename");
      var named = file && (file.getAttribute("aria-label") || textIn(file));
      if (named) setName(link, "Download " + named + " (" + textIn(link).replace(/\s*⇣$/, "") + ")");
    });
    // a picture's download button sits inside its download link: one control, the link, named by the button
    document.querySelectorAll("a[download] button").forEach(function (button) {
      var link = button.closest("a");
      setName(link, button.getAttribute("aria-label") || button.getAttribute("title") || textIn(button));
      if (button.getAttribute("tabindex") !== "-1") button.setAttribute("tabindex", "-1");
      if (!button.hasAttribute("aria-hidden")) button.setAttribute("aria-hidden", "true");
    });
    // the footer's buttons: their icon's alt text repeated their words ("Settings Settings", "Use via API logo")
    document.querySelectorAll("footer button img[alt]:not([alt='']), footer a img[alt]:not([alt=''])").forEach(function (img) {
      if (textIn(img.closest("button, a"))) img.setAttribute("alt", "");
    });
  }

  // a box that scrolls takes the focus (when nothing inside it can), so the keyboard can scroll it
  var SCROLLERS = "table, div, pre, ul";
  function scrollers() {
    var boxes = document.querySelectorAll(".gradio-container " + SCROLLERS.split(", ").join(", .gradio-container "));
    for (var i = 0; i < boxes.length; i++) {
      var box = boxes[i];
      if (box.hasAttribute("data-bd-scroll") || box.closest("svg, .js-plotly-plot, [role=listbox]")) continue;
      var wide = box.scrollWidth > box.clientWidth + 1, tall = box.scrollHeight > box.clientHeight + 1;
      if (!wide && !tall) continue;
      var style = getComputedStyle(box);
      var scrolls = (wide && /auto|scroll/.test(style.overflowX)) || (tall && /auto|scroll/.test(style.overflowY));
      if (!scrolls || box.querySelector("a[href], button, input, select, textarea, [tabindex]")) continue;
      if (box.getAttribute("tabindex") === "0") continue;  // a code view's scroller comes with -1
      box.setAttribute("tabindex", "0");
      box.setAttribute("data-bd-scroll", "");
    }
  }

  // --- every PlotlyFigure's text twin: the numbers it shows, as tables a screen reader reads ------------
  function plain(t) {
    var s = t == null ? "" : (typeof t === "string" ? t : (t.text || ""));
    return s.replace(/<br\s*\/?>/g, " ").replace(/<[^>]+>/g, "").trim();
  }
  function num(v) {
    if (typeof v !== "number") return v == null ? "" : String(v);
    if (!isFinite(v)) return String(v);
    return String(Number(v.toPrecision(4)));
  }
  function list(v) {
    if (v == null) return [];
    if (Array.isArray(v)) return v;
    if (ArrayBuffer.isView(v)) return Array.prototype.slice.call(v);
    return [];
  }
  function table(caption, head, rows) {
    var t = document.createElement("table"), c = document.createElement("caption");
    c.textContent = caption;
    t.appendChild(c);
    var tr = document.createElement("tr");
    head.forEach(function (h) { var th = document.createElement("th"); th.scope = "col"; th.textContent = h; tr.appendChild(th); });
    t.appendChild(tr);
    rows.forEach(function (r) {
      var row = document.createElement("tr");
      r.forEach(function (cell, j) {
        var td = document.createElement(j === 0 ? "th" : "td");
        if (j === 0) td.scope = "row";
        td.textContent = cell;
        row.appendChild(td);
      });
      t.appendChild(row);
    });
    return t;
  }
  function heatmapCells(data) {
    return data.reduce(function (n, trace) {
      if (trace.type !== "heatmap" || trace.visible === false || trace.visible === "legendonly") return n;
      var z = list(trace.z);
      return n + z.length * (z.length ? list(z[0]).length : 0);
    }, 0);
  }
  function traceTable(trace, name, layout, summarise) {
    var xs = list(trace.x), ys = list(trace.y), texts = list(trace.text);
    // an axis with no title: a bar's axes are its categories and their values (a screen reader heard "y | x")
    var barCategory = trace.type === "bar" ? (trace.orientation === "h" ? "y" : "x") : "";
    var untitled = function (axis) { return barCategory ? (axis === barCategory ? "item" : "value") : axis; };
    var xTitle = plain(((layout[trace.xaxis ? "xaxis" + trace.xaxis.slice(1) : "xaxis"] || {}).title)) || untitled("x");
    var yTitle = plain(((layout[trace.yaxis ? "yaxis" + trace.yaxis.slice(1) : "yaxis"] || {}).title)) || untitled("y");
    if (trace.type === "heatmap") {
      var z = list(trace.z).map(list);
      var cols = z.length ? z[0].length : 0;
      var colNames = cols ? z[0].map(function (_, j) { return xs.length ? String(xs[j]) : String(j); }) : [];
      var rowName = function (r) { return ys.length ? String(ys[r]) : String(r); };
      if (!summarise) {
        return table(name + ": rows " + yTitle + ", columns " + xTitle, [yTitle].concat(colNames),
                     z.map(function (row, r) { return [rowName(r)].concat(row.map(num)); }));
      }
      return table(name + ": the largest value of each row (" + z.length + " × " + cols + " values)",
                   [yTitle, "largest at " + xTitle, "value"],
                   z.map(function (row, r) {
                     var best = 0;
                     row.forEach(function (v, j) { if (v > row[best]) best = j; });
                     return [rowName(r), colNames[best], num(row[best])];
                   }));
    }
    if (!xs.length && !ys.length) return null;
    var horizontal = trace.orientation === "h";
    var keys = horizontal ? ys : xs, values = horizontal ? xs : ys;
    if (!keys.length) keys = values.map(function (_, j) { return j; });
    var head = [horizontal ? yTitle : xTitle, horizontal ? xTitle : yTitle];
    var withText = texts.length === values.length && texts.some(function (t) { return t !== "" && t != null; });
    if (withText) head.push("label");
    if (values.length * head.length <= MAX_SERIES_CELLS && values.length <= 400) {
      return table(name, head, values.map(function (v, j) {
        var row = [String(keys[j]), num(v)];
        if (withText) row.push(plain(String(texts[j])));
        return row;
      }));
    }
    var lo = 0, hi = 0;
    values.forEach(function (v, j) { if (v < values[lo]) lo = j; if (v > values[hi]) hi = j; });
    var last = values.length - 1;
    return table(name + " (" + values.length + " points)", ["point"].concat(head.slice(0, 2)), [
      ["first", String(keys[0]), num(values[0])], ["last", String(keys[last]), num(values[last])],
      ["smallest", String(keys[lo]), num(values[lo])], ["largest", String(keys[hi]), num(values[hi])],
    ]);
  }
  // the title of a trace's panel in a grid of subplots (make_subplots writes each as an annotation over its panel's
  // top, centred on its x domain), or ""
  function panelTitle(trace, layout) {
    var xa = layout["xaxis" + (trace.xaxis || "x").slice(1)] || {}, ya = layout["yaxis" + (trace.yaxis || "y").slice(1)] || {};
    var xd = xa.domain, yd = ya.domain, best = "", gap = Infinity;
    if (!xd || !yd || !Object.keys(layout).some(function (k) { return /^xaxis\d+$/.test(k); })) return "";
    (layout.annotations || []).forEach(function (a) {
      if (a.showarrow !== false || a.xref !== "paper" || a.yref !== "paper" || !(a.x >= xd[0] && a.x <= xd[1])) return;
      var d = a.y - yd[1];  // the nearest above the panel's top (a panel further down has the titles above it too)
      if (d > -1e-6 && d < gap) { gap = d; best = plain(a.text); }
    });
    return best;
  }
  function twin(gd) {
    var data = gd._fullData && gd._fullData.length ? gd._fullData : (gd.data || []);
    var layout = gd.layout || {};
    var box = document.createElement("div");
    box.className = "pf-twin bd-sr-only";
    // the figure's title, else the label its block shows above it ("Predictions")
    var label = gd.closest(".block") && gd.closest(".block").querySelector(".pf-label");
    var title = plain(layout.title) || (label ? label.textContent.trim() : "");
    box.setAttribute("aria-label", "The numbers of the chart" + (title ? " " + title : ""));
    box.setAttribute("role", "group");
    var given = gd.data || [], summarise = heatmapCells(data) > MAX_CELLS, count = {}, seen = {};
    var ownName = function (t, i) { return plain((given[t.index != null ? t.index : i] || {}).name); };
    var panelOf = function (t) { return (t.xaxis || "x") + (t.yaxis || "y"); };
    var add = function (key) { count[key] = (count[key] || 0) + 1; };
    data.forEach(function (t, i) { add(panelOf(t)); add(panelOf(t) + "\u0000" + ownName(t, i)); });
    data.forEach(function (trace, i) {
      if (trace.visible === false || trace.visible === "legendonly") return;
      var own = ownName(trace, i), panel = panelTitle(trace, layout), key = panelOf(trace) + "\u0000" + own;
      seen[key] = (seen[key] || 0) + 1;
      if (own && count[key] > 1) own += " (" + seen[key] + " of " + count[key] + ")";  // one name, several lines
      var alone = count[panelOf(trace)] === 1;  // the only trace of its panel
      var name = [title, panel, own || (data.length > 1 && !(panel && alone) ? "series " + (i + 1) : "")].filter(Boolean)
        .join(" — ") || "The chart";
      var t = traceTable(trace, name, layout, summarise);
      if (t) box.appendChild(t);
    });
    if (!box.childNodes.length) {
      var p = document.createElement("p");
      p.textContent = "The chart" + (title ? " " + title : "") + " shows no numbers yet.";
      box.appendChild(p);
    }
    // the chart's toolbar: seven buttons ("Zoom", "Pan", …) a screen reader read with no chart to act on
    gd.querySelectorAll(".modebar").forEach(function (bar) {
      if (bar.getAttribute("role") !== "toolbar") bar.setAttribute("role", "toolbar");
      setName(bar, "Chart tools" + (title ? ": " + title : ""));
    });
    var old = gd.parentNode && gd.parentNode.querySelector(":scope > .pf-twin");
    if (old) old.replaceWith(box); else gd.insertAdjacentElement("afterend", box);
    gd.querySelectorAll("svg.main-svg").forEach(function (svg) { svg.setAttribute("aria-hidden", "true"); });
  }
  // plotly's events live on gd._ev: a figure emptied (an error's answer) is purged, its listeners dropped, and drawn
  // again with a new gd._ev, so the twin listens again whenever that changed (a flag set once left the twin reading
  // the chart of before the error, at every later answer)
  function figures() {
    document.querySelectorAll(".js-plotly-plot").forEach(function (gd) {
      if (gd._ev && gd.__bdTwinEv === gd._ev) return;
      if (typeof gd.on !== "function") {  // purged: the numbers it showed are gone, and their twin with them
        var stale = gd.parentNode && gd.parentNode.querySelector(":scope > .pf-twin");
        if (stale) stale.remove();
        return;
      }
      gd.__bdTwinEv = gd._ev;
      gd.on("plotly_afterplot", function () { twin(gd); });
      if (gd._fullLayout) twin(gd);
    });
  }

  // --- on a phone, a main button's answer comes into view when it is pressed --------------------------
  // at once (its progress shows there), and again when the answer has come (what it draws above may move it),
  // unless the learner scrolled in between
  function busy() {
    return Array.prototype.some.call(document.querySelectorAll(".pending, [data-testid=status-tracker]:not(.hide)"),
                                     function (e) { return e.offsetParent !== null && /pending|processing|\d/.test(e.className + e.textContent); });
  }
  function bringIntoView(target) {
    var moved = false, started = Date.now(), seenBusy = false;
    function mark() { moved = true; }
    var kinds = ["wheel", "touchmove", "keydown"];
    kinds.forEach(function (k) { window.addEventListener(k, mark, { passive: true }); });
    function show() {
      var answer = document.querySelector(target);
      if (answer && !moved) answer.scrollIntoView({ block: "start" });
    }
    requestAnimationFrame(show);
    var timer = setInterval(function () {
      var now = busy();
      seenBusy = seenBusy || now;
      var waited = Date.now() - started;
      // never seen busy: a queued request may show its progress late, so wait longer before the last look
      if ((!now && (seenBusy || waited > 5000)) || waited > 60000 || moved) {
        clearInterval(timer);
        requestAnimationFrame(show);
        // again each time the page's height changes in the next 3 s: the answer's own drawing (a chart laid out
        // late on a busy phone, its text twin) moves what is above it
        var resized = null, observer = window.ResizeObserver ? new ResizeObserver(function () {
          if (resized === null) resized = requestAnimationFrame(function () { resized = null; show(); });
        }) : null;
        if (observer) observer.observe(document.body);
        setTimeout(show, 500);
        setTimeout(function () {
          show();
          if (observer) observer.disconnect();
          kinds.forEach(function (k) { window.removeEventListener(k, mark); });
        }, 3000);
      }
    }, 200);
  }
  document.addEventListener("click", function (ev) {
    if (window.innerWidth >= SETTINGS.narrow) return;
    var button = ev.target && ev.target.closest ? ev.target.closest("button[id]") : null;
    var target = button && SETTINGS.answers[button.id];
    // a link's follow-up that shows another part of the tab presses the run button with data-bd-followed: its own
    // scroll wins (this one took a phone back to the tab's first section, 4.5 screens above Keep exploring's loss)
    if (target && !button.dataset.bdFollowed) bringIntoView(target);
  });

  // an error stays until it is closed (gr.Error with no duration: a long refusal is read to its end), and gradio
  // gathers every error into one toast: "Error (3)" read out, and shown, three messages, two of them stale and from
  // other tabs. A press of a button of the page (one outside the toasts), or Enter in one of its text boxes (which
  // sends a request as a button does: Learn's sentence, say), closes the errors before it: what it brings is then
  // the only error on screen ("Error (2)" after a second Enter, and a refusal kept over an answer that came)
  function closeErrors() {
    document.querySelectorAll(".toast-body.error [data-testid=toast-close]").forEach(function (close) { close.click(); });
  }
  document.addEventListener("click", function (ev) {
    var button = ev.target && ev.target.closest ? ev.target.closest("button") : null;
    if (!button || button.closest(".toast-wrap")) return;
    closeErrors();
  }, true);
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter" || ev.shiftKey || ev.isComposing) return;
    var field = ev.target && ev.target.closest ? ev.target.closest("input, textarea") : null;
    if (!field || field.closest(".toast-wrap")) return;
    closeErrors();
  }, true);

  // --- keep it so as gradio redraws the page -----------------------------------------------------------
  // not while an answer is on its way (a progress tracker shows): the page changes again when it comes, and a
  // pass here (it measures every scrolling box) would hold up drawing it; at most ~3 s of waiting
  // the root's data-bd-tidy says whether a pass is still to come ("pending") or the page is as this script leaves
  // it ("done"): a check of the page (the browser tests' axe) waits for it
  var pending = false, waited = 0;
  function mark(state) {  // the root when there is one: a script run before the document (a test's) has none yet
    if (document.documentElement) document.documentElement.setAttribute("data-bd-tidy", state);
  }
  function tidy() {
    pending = false;
    if (busy() && waited < 20) { waited++; later(); return; }
    waited = 0;
    rovingTabs();
    names();
    figures();
    scrollers();
    if (!pending) mark("done");
  }
  function later() {
    if (pending) return;
    pending = true;
    mark("pending");
    setTimeout(function () { requestAnimationFrame(tidy); }, 150);
  }
  // a dropdown's list closes when the focus moves on to another control (Tab): gradio left it open, covering the
  // buttons under it. Only a move to a focusable element: a click on an option moves the focus nowhere first.
  function closeLeftLists(e) {
    var input = e.target;
    if (!input.getAttribute || input.getAttribute("role") !== "combobox" || !e.relatedTarget) return;
    var box = input.closest(".wrap");
    if (box && box.contains(e.relatedTarget)) return;
    setTimeout(function () {
      if (input.getAttribute("aria-expanded") === "true" && document.activeElement !== input)
        input.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    }, 0);
  }
  function start() {
    document.addEventListener("focusout", closeLeftLists, true);
    document.querySelectorAll("[role=listbox]").forEach(unfocusable);
    new MutationObserver(function (records) { listboxes(records); later(); }).observe(document.body, { childList: true, subtree: true, attributes: true,
                                                        attributeFilter: ["aria-selected", "class", "style"] });
    window.addEventListener("resize", later);
    later();
  }
  if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
})();
