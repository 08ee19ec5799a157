"""The page on a narrow screen (a phone): the CSS that reflows the tabs into one column, and a small
script that refits plotly figures to the width they get.

Figures are drawn once on the server for a desktop page. On a screen narrower than ``NARROW_PX`` the
script, which wraps ``Plotly.react`` (the call Gradio draws every figure with), changes only the
figure's layout before it is drawn: a grid of subplots is stacked into one column (each panel keeps
its height, its title, legend and notes follow it), a fixed width gives way to the screen's width,
and titles are broken into lines that fit, below the toolbar instead of under it. The data are
never touched, so every number stays the one the server computed. A rotation or resize redraws
each figure from its original layout. A tap on a token chip or a mask-grid cell shows the tip a
mouse pointer's hover would.
"""

from __future__ import annotations

NARROW_PX = 640  # below this width (CSS px) a figure or a row of inputs goes to one column

CSS = f"""
@media (max-width: {NARROW_PX}px) {{
  /* rows of inputs: one per line (Gradio wraps a row's children once they reach their min-width) */
  .row > *, .row > .form > * {{ min-width: 100% !important; }}
  /* the all-heads overview keeps cells big enough to tap (56 px); its box scrolls sideways */
  #att-overview .image-container {{ overflow-x: auto; justify-content: flex-start; }}
  #att-overview .image-container button, #att-overview .image-frame {{ width: max-content; max-width: none; }}
  #att-overview img {{ width: auto !important; height: auto !important; max-width: none !important;
                      max-height: none !important; object-fit: none; }}
  #att-overview.block {{ height: auto !important; }}
  /* wide tables scroll inside their own box; the page itself never scrolls sideways */
  .prose table, .md table {{ display: block; max-width: 100%; overflow-x: auto; }}
  .js-plotly-plot {{ max-width: 100%; }}
  /* the static/dynamic mask grid: a 16-token sentence's strip fits beside its label */
  #ml-epochs-view span[title] {{ width: 12px !important; }}
}}
"""

SCRIPT = """
<script>
(function () {
  "use strict";
  var NARROW = %(narrow)d;
  var TITLE_GAP = 46;  // px above a figure's title: room for plotly's toolbar (always shown on a touch screen)
  function textOf(t) { return t == null ? "" : (typeof t === "string" ? t : (t.text || "")); }
  function plain(s) { return s.replace(/<[^>]+>/g, ""); }
  // plotly never wraps a title: break it between words into lines of at most `width` px
  function wrap(text, width, size) {
    var per = Math.max(14, Math.floor(width / ((size || 14) * 0.56)));
    return text.split(/<br\\s*\\/?>/).map(function (line) {
      if (plain(line).length <= per) return line;
      var out = [], cur = "";
      line.split(" ").forEach(function (w) {
        if (cur && plain(cur + " " + w).length > per) { out.push(cur); cur = w; } else { cur = cur ? cur + " " + w : w; }
      });
      if (cur) out.push(cur);
      return out.join("<br>");
    }).join("<br>");
  }
  function lines(text) { return text ? text.split(/<br\\s*\\/?>/).length : 0; }
  // the subplot cells of a make_subplots figure: x axis + the y axis it is anchored to
  function cells(layout) {
    var out = [];
    Object.keys(layout).forEach(function (k) {
      if (!/^xaxis\\d*$/.test(k)) return;
      var xa = layout[k];
      if (!xa || !xa.domain || xa.overlaying) return;
      var yk = "yaxis" + String(xa.anchor || "y").slice(1);
      var ya = layout[yk];
      if (!ya || !ya.domain) return;
      out.push({ y: ya.domain.slice(), x: xa.domain.slice(), yk: yk, xk: k });
    });
    return out;
  }
  // a grid of subplots -> one column; items placed on the paper (titles, legends, notes) follow their panel
  function stack(layout) {
    var cs = cells(layout), columns = {};
    cs.forEach(function (c) { columns[c.x[0].toFixed(3)] = 1; });
    if (Object.keys(columns).length < 2) return false;
    var m = layout.margin || {}, top = m.t != null ? m.t : 100, bottom = m.b != null ? m.b : 80;
    var oldPlot = (layout.height || 450) - top - bottom;
    cs.sort(function (a, b) { return (b.y[1] - a.y[1]) || (a.x[0] - b.x[0]); });
    var gap = 80;  // px between panels: the next panel's title, the previous one's axis and legend
    cs.forEach(function (a) { cs.forEach(function (b) {
      if (a.y[0] > b.y[1] && Math.abs(a.x[0] - b.x[0]) < 1e-3) gap = Math.max(gap, (a.y[0] - b.y[1]) * oldPlot);
    }); });
    gap = Math.min(gap, 120);
    var heights = cs.map(function (c) { return Math.max(40, (c.y[1] - c.y[0]) * oldPlot); });
    var newPlot = heights.reduce(function (s, h) { return s + h; }, 0) + gap * (cs.length - 1);
    var y = newPlot;
    cs.forEach(function (c, i) {
      c.newTop = y / newPlot; y -= heights[i]; c.newBottom = Math.max(0, y / newPlot); y -= gap;
    });
    // where an item on the paper goes: the panel it lies in or hangs under keeps it at the same px offset
    function move(item) {
      if (item == null || typeof item.x !== "number" || typeof item.y !== "number") return;
      var best = null;
      cs.forEach(function (c) {
        if (item.x < c.x[0] - 0.02 || item.x > c.x[1] + 0.02 || item.y > c.y[1] + 0.05) return;
        if (best === null || c.y[1] < best.y[1]) best = c;
      });
      if (best === null) return;
      var rel = (item.x - best.x[0]) / Math.max(1e-6, best.x[1] - best.x[0]);
      item.x = Math.min(1, Math.max(0, rel));
      item.y = best.newTop - (best.y[1] - item.y) * oldPlot / newPlot;
    }
    (layout.annotations || []).forEach(function (a) {
      if ((a.xref || "paper") === "paper" && (a.yref || "paper") === "paper") move(a);
    });
    Object.keys(layout).forEach(function (k) { if (/^legend\\d*$/.test(k)) move(layout[k]); });
    cs.forEach(function (c) {
      layout[c.xk].domain = [0, 1];
      layout[c.yk].domain = [c.newBottom, c.newTop];
      layout[c.yk].showticklabels = true;  // each panel names its rows again
    });
    layout.height = Math.round(newPlot + top + bottom);
    return true;
  }
  function fit(gd, layout) {
    var width = gd.clientWidth || (gd.parentElement && gd.parentElement.clientWidth) || window.innerWidth;
    if (!width || width >= NARROW) return layout;
    layout = JSON.parse(JSON.stringify(layout));
    stack(layout);
    if (layout.width && layout.width > width) delete layout.width;
    layout.autosize = true;
    (layout.annotations || []).forEach(function (a) {
      if (typeof a.text === "string") a.text = wrap(a.text, width - 20, (a.font && a.font.size) || 12);
    });
    var title = textOf(layout.title);
    if (title) {
      var t = typeof layout.title === "string" ? { text: title } : layout.title;
      t.text = wrap(title, width - 20, (t.font && t.font.size) || 17);
      t.x = 0.5; t.xanchor = "center"; t.yref = "container"; t.yanchor = "top";
      t.y = 1 - TITLE_GAP / (layout.height || 450);
      layout.title = t;
      layout.margin = layout.margin || {};
      var above = 0;  // the top panel's own title lines, between the figure's title and the panel
      (layout.annotations || []).forEach(function (a) {
        if (typeof a.y === "number" && a.y >= 0.98 && (a.yref || "paper") === "paper") above = Math.max(above, lines(a.text));
      });
      var need = TITLE_GAP + 22 * lines(t.text) + 15 * above + 8;
      if ((layout.margin.t || 0) < need) {
        if (layout.height) layout.height += need - (layout.margin.t || 0);
        layout.margin.t = need;
        t.y = 1 - TITLE_GAP / (layout.height || 450);
      }
    }
    return layout;
  }
  function install(P) {
    if (!P || P.__phoneFit || typeof P.react !== "function") return P;
    var react = P.react;
    P.react = function (gd, data, layout, config) {
      try {
        if (gd && gd.nodeType === 1 && layout && typeof layout === "object") {
          gd.__wideLayout = layout;
          layout = fit(gd, layout);
        }
      } catch (err) { console.warn("phone layout:", err); }
      return react.call(this, gd, data, layout, config);
    };
    P.__phoneFit = true;
    var last = window.innerWidth;
    window.addEventListener("resize", function () {
      var now = window.innerWidth;
      if ((now < NARROW) === (last < NARROW)) { last = now; return; }
      last = now;
      document.querySelectorAll(".js-plotly-plot").forEach(function (gd) {
        if (gd.__wideLayout && gd.data) P.react(gd, gd.data, gd.__wideLayout);
      });
    });
    return P;
  }
  // a tap shows what a hover shows: the title of a token chip or a mask-grid cell, in a small tip
  var TIPPED = "#tok-chips, #ml-chips, #ml-epochs-view, #nsp-pairs";
  document.addEventListener("click", function (ev) {
    var el = ev.target && ev.target.closest ? ev.target.closest("[title]") : null;
    var old = document.getElementById("tap-tip");
    if (old) old.remove();
    if (!el || !el.closest(TIPPED) || !el.getAttribute("title")) return;
    var tip = document.createElement("div"), box = el.getBoundingClientRect();
    tip.id = "tap-tip";
    tip.textContent = el.getAttribute("title");
    tip.style.cssText = "position:fixed;z-index:1000;max-width:80vw;padding:4px 8px;border-radius:6px;" +
      "background:#111827;color:#fff;font-size:13px;pointer-events:none;white-space:pre-wrap";
    document.body.appendChild(tip);
    var left = Math.min(Math.max(4, box.left), window.innerWidth - tip.offsetWidth - 4);
    var top = box.top - tip.offsetHeight - 6;
    tip.style.left = left + "px";
    tip.style.top = (top < 4 ? box.bottom + 6 : top) + "px";
    setTimeout(function () { if (tip.parentNode) tip.remove(); }, 4000);
  });
  var current = window.Plotly;
  if (current) { install(current); return; }
  Object.defineProperty(window, "Plotly", {
    configurable: true,
    get: function () { return current; },
    set: function (v) { current = install(v); },
  });
})();
</script>
""" % {"narrow": NARROW_PX}
