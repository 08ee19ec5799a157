// PlotlyFigure (bertdemo/ui/plotly_figure.py): one plotly figure, drawn into the component's own
// element and updated there in place with Plotly.react.
//
// Runs as gr.HTML's js_on_load. Gradio gives: `element` (the component's root), `props` (props.value:
// {type: "plotly", plot: "<figure JSON>"} or null; props.narrow: the phone width in px), `watch` (a
// callback after each new value) and `trigger` (an event sent to the server). plotly.js itself is
// loaded by the component's `head` (the installed plotly package's own file, served by this app).
//
// - A new value is drawn at the end of the current task (the last value wins), into one drawing
//   element kept for the component's life: plotly updates the figure it already holds.
// - A figure nobody can see (a closed accordion, a hidden tab or block: zero width) is drawn when it
//   gets a width; a width change refits it (plotly's resize, only when its size really differs).
// - A lazy figure (PlotlyFigure(lazy=True): its block has the class pf-lazy) more than a screen's
//   height from the viewport is drawn when it comes within that distance (an IntersectionObserver):
//   a long page's figures far below what the learner reads cost nothing until they scroll towards
//   them. With a class pf-lazy-N as well (PlotlyFigure(lazy=0.5): pf-lazy-50) the distance is N
//   hundredths of a screen. Until then its old picture is hidden, never shown as the new answer. A
//   figure already drawn is still refitted wherever it is.
// - Below props.narrow px the layout (never the data) is fitted to the screen: a grid of subplots
//   stacked into one column, a fixed width dropped (or kept at layout.meta.narrow_min_width, the box then
//   scrolling sideways), titles and notes broken into lines that fit, a one-panel
//   heatmap's colour bar laid across the top of the plot instead of beside it.
// - A click on a point sends a "select" event: index (plotly's point index), value {x, y, z, text,
//   curve}.
(function () {
  "use strict";
  var NARROW = Number(props.narrow) || 640;  // props.narrow is absent once a gr.update mounted the figure: the same NARROW_PX (tests/test_plotly_figure.py)
  var TITLE_GAP = 46;  // px above a figure's title: room for plotly's toolbar (always shown on a touch screen)
  function titleY(layout) { return 1 - TITLE_GAP / (layout.height || 450); }  // a container title's y, TITLE_GAP down
  // no drag handles on the axes' ends and edges (zoom and pan stay: drag in the plot, or the toolbar): plotly
  // builds seven of them for every subplot at every draw, a sixth of a five-panel figure's drawing time
  // plotly's own "Share chart" button would upload the figure (a visitor's data among it) to Plotly Cloud: never
  // offered. Box and lasso select are left out too: nothing in the app reads a selection, and on a phone the
  // toolbar then fits in one row instead of wrapping over the figure's title
  var CONFIG = { displaylogo: false, responsive: false, showAxisDragHandles: false, showSendToCloud: false,
                 modeBarButtonsToRemove: ["select2d", "lasso2d"] };

  function textOf(t) { return t == null ? "" : (typeof t === "string" ? t : (t.text || "")); }
  function plain(s) { return s.replace(/<[^>]+>/g, ""); }
  // plotly never wraps a title: break it between words into lines of at most `width` px (a character taken as 0.6 of
  // the font's size: at 0.56 a line of digits and capitals, "feed-forward down (9×384, first 64", ran past the edge)
  function wrap(text, width, size) {
    var per = Math.max(14, Math.floor(width / ((size || 14) * 0.6)));
    return text.split(/<br\s*\/?>/).map(function (line) {
      if (plain(line).length <= per) return line;
      var out = [], cur = "";
      line.split(" ").forEach(function (w) {
        if (cur && plain(cur + " " + w).length > per) { out.push(cur); cur = w; } else { cur = cur ? cur + " " + w : w; }
      });
      if (cur) out.push(cur);
      return out.join("<br>");
    }).join("<br>");
  }
  function lines(text) { return text ? text.split(/<br\s*\/?>/).length : 0; }
  // the subplot cells of a make_subplots figure: x axis + the y axis it is anchored to
  function cells(layout) {
    var out = [];
    Object.keys(layout).forEach(function (k) {
      if (!/^xaxis\d*$/.test(k)) return;
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
    // where an item on the paper goes: the panel it lies in or hangs under keeps it at the same px offset. A
    // legend names the traces of its whole row: it goes with the row's panel stacked lowest (the Fine-tune
    // curves' legend, under the loss panel, hid the accuracy panel's top tick), with or without an x of its own,
    // which it keeps: the stacked panels span the width its row spanned
    function move(item, legend) {
      if (item == null || typeof item.y !== "number" || (!legend && typeof item.x !== "number")) return;
      var x = typeof item.x === "number" ? item.x : 0, best = null;
      cs.forEach(function (c) {
        if (item.y > c.y[1] + 0.05 || (!legend && (x < c.x[0] - 0.02 || x > c.x[1] + 0.02))) return;
        if (best === null || c.y[1] < best.y[1] - 1e-6 ||
            (legend && Math.abs(c.y[1] - best.y[1]) <= 1e-6 && c.newBottom < best.newBottom)) best = c;
      });
      if (best === null) return;
      if (!legend) item.x = Math.min(1, Math.max(0, (x - best.x[0]) / Math.max(1e-6, best.x[1] - best.x[0])));
      item.y = best.newTop - (best.y[1] - item.y) * oldPlot / newPlot;
    }
    (layout.annotations || []).forEach(function (a) {
      if ((a.xref || "paper") === "paper" && (a.yref || "paper") === "paper") move(a, false);
    });
    Object.keys(layout).forEach(function (k) {  // a legend placed on the whole figure (yref container) stays put
      if (/^legend\d*$/.test(k) && layout[k] && (layout[k].yref || "paper") === "paper") move(layout[k], true);
    });
    cs.forEach(function (c) {
      layout[c.xk].domain = [0, 1];
      layout[c.yk].domain = [c.newBottom, c.newTop];
      layout[c.yk].showticklabels = true;  // each panel names its rows again (an axis the wide layout left
      layout[c.yk].visible = true;         // undrawn, its rows named by the panel beside it, too)
    });
    layout.height = Math.round(newPlot + top + bottom);
    return true;
  }
  // the traces to draw at `width` px: on a narrow screen a legend entry too long for it wraps at its spaces (a
  // Fine-tune run's name ran off the phone's edge); the server's own traces are not changed
  function named(data, width) {
    if (!width || width >= NARROW) return data;
    return data.map(function (t) {
      if (typeof t.name !== "string" || t.showlegend === false) return t;
      var name = wrap(t.name, width - 90, 12);
      return name === t.name ? t : Object.assign({}, t, { name: name });
    });
  }
  // a one-panel figure's colour bar at the plot's right edge (x 1, anchored left: the heatmaps' convention) lies
  // above the plot on a narrow screen, across its width: at 390 px the bar and its numbers took a third of the
  // attention heatmap's width, its columns 7 px each. `data` and `layout`: the copies about to be drawn (changed here)
  var BAR_PX = 44;  // the bar, its numbers and its title, above the plot
  function barOnTop(data, layout, width) {
    if (!width || width >= NARROW || cells(layout).length > 1) return data;
    var edge = data.filter(function (t) {
      return t.colorbar && t.showscale !== false && t.colorbar.x === 1 && t.colorbar.xanchor === "left";
    });
    if (edge.length !== 1) return data;
    var bar = Object.assign({}, edge[0].colorbar, { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom",
                                                   ypad: 6, xpad: 0, len: 1, lenmode: "fraction", thickness: 10 });
    var title = textOf(bar.title);
    bar.title = title ? { text: title, side: "right" } : undefined;
    layout.margin = layout.margin || {};
    layout.margin.t = (layout.margin.t || 0) + BAR_PX;
    if (layout.height) layout.height += BAR_PX;
    if (layout.margin.r != null) layout.margin.r = Math.min(layout.margin.r, 24);  // the bar's room no longer needed
    if (layout.title && typeof layout.title === "object" && layout.title.yref === "container")
      layout.title.y = titleY(layout);
    return data.map(function (t) { return t === edge[0] ? Object.assign({}, t, { colorbar: bar }) : t; });
  }
  // the px a note has on a line: a panel's title is centred over its panel, which starts after the left margin (the
  // rows' labels), so it has twice the distance to the nearer edge (the whole width, less 20 px, left a line of
  // "feed-forward up + GELU (9×1536," 4 px past the figure's right edge)
  function room(a, layout, width) {
    var m = layout.margin || {}, left = m.l != null ? m.l : 80, right = m.r != null ? m.r : 80;
    if ((a.xref || "paper") !== "paper" || typeof a.x !== "number") return width - 20;
    var at = left + a.x * Math.max(width - left - right, 1), anchor = a.xanchor || "auto";
    if (anchor === "left") return Math.max(width - at - 10, 80);
    if (anchor === "right") return Math.max(at - 10, 80);
    return Math.max(2 * Math.min(at, width - at) - 10, 80);
  }
  // the layout to draw at `width` px: the server's own on a wide screen, fitted to a narrow one
  function fit(layout, width) {
    if (!width || width >= NARROW) return layout;
    layout = JSON.parse(JSON.stringify(layout));
    stack(layout);
    // a fixed width is dropped, unless the figure names the least width its cells' words need (layout.meta
    // .narrow_min_width: the logit lens's words): then it keeps that much, and its box scrolls sideways
    var least = layout.meta && layout.meta.narrow_min_width;
    if (layout.width && layout.width > width) {
      if (least > width) layout.width = Math.min(layout.width, least); else delete layout.width;
    }
    layout.autosize = true;
    (layout.annotations || []).forEach(function (a) {
      if (typeof a.text === "string") a.text = wrap(a.text, room(a, layout, width), (a.font && a.font.size) || 12);
    });
    // an x axis's title too ("position of the word in its sentence (1 = first word)" ran off a phone's edge): the
    // lines it gains get room under the plot, as many more pixels of margin and of height
    Object.keys(layout).forEach(function (k) {
      var axis = layout[k];
      if (!/^xaxis\d*$/.test(k) || !axis || !textOf(axis.title)) return;
      var t = typeof axis.title === "string" ? { text: axis.title } : axis.title, size = (t.font && t.font.size) || 14;
      var before = lines(textOf(t));
      t.text = wrap(textOf(t), width - 40, size);
      axis.title = t;
      var more = (lines(t.text) - before) * Math.round(size * 1.3);
      if (more > 0) {
        layout.margin = layout.margin || {};
        layout.margin.b = (layout.margin.b != null ? layout.margin.b : 80) + more;
        if (layout.height) layout.height += more;
      }
    });
    var title = textOf(layout.title);
    if (title) {
      var t = typeof layout.title === "string" ? { text: title } : layout.title;
      t.text = wrap(title, width - 20, (t.font && t.font.size) || 17);
      // centred on the screen's part of a figure kept wider than the screen (it scrolls), else on the figure
      t.xref = "container"; t.x = layout.width > width ? (width / 2) / layout.width : 0.5; t.xanchor = "center";
      t.yref = "container"; t.yanchor = "top";
      t.y = titleY(layout);
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
        t.y = titleY(layout);
      }
    }
    return layout;
  }

  // the drawing element: made once, kept for the component's life (re-attached if Gradio re-renders
  // the template around it)
  var gd = document.createElement("div");
  gd.className = "pf-drawing";
  var figure = null;     // the figure to show: {data, layout} as the server sent it
  var drawnFor = null;   // the value last drawn (an object identity)
  var drawnNarrow = null;
  var scheduled = false, listening = false;
  // a lazy figure (its block has the class pf-lazy: the props an update mounts it with hold only that
  // update's keys) is drawn within a screen's height of the viewport; measured when a new figure comes
  // how near, in screens' heights (null: not lazy)
  function reach() {
    var block = element.closest(".pf-lazy");
    if (!block) return null;
    var m = /(?:^|\s)pf-lazy-(\d+)(?:\s|$)/.exec(block.className);
    return m ? Number(m[1]) / 100 : 1;
  }
  function near() {
    var k = reach();
    if (k === null) return true;
    var r = element.getBoundingClientRect(), h = window.innerHeight;
    return r.bottom > -k * h && r.top < (1 + k) * h;
  }
  // the viewport grown by that reach above and below: near(), as the page scrolls (made at the first
  // figure, when the block and its classes are there)
  var observer = null;
  function observe() {
    var k = reach();
    if (observer || k === null) return;
    observer = new IntersectionObserver(function (entries) {
      if (entries[entries.length - 1].isIntersecting && props.value !== drawnFor) schedule();
    }, { rootMargin: Math.round(100 * k) + "% 0px" });
    observer.observe(element);
  }
  // a figure left far away is looked at again once the page has settled (the figures above it drawn)
  function recheck() {
    requestAnimationFrame(function () { if (props.value !== drawnFor && near()) schedule(); });
  }
  function width() { return element.clientWidth; }
  function attach() { if (gd.parentNode !== element) element.appendChild(gd); }
  function parse(value) {
    if (!value) return null;
    var spec = typeof value === "string" ? value : value.plot;
    if (!spec) return null;
    var fig = typeof spec === "string" ? JSON.parse(spec) : spec;
    return { data: fig.data || [], layout: fig.layout || {} };
  }
  function listen() {
    if (listening || typeof gd.on !== "function") return;
    listening = true;
    gd.on("plotly_click", function (ev) {
      var p = ev && ev.points && ev.points[0];
      if (!p) return;
      var index = p.pointIndex != null ? p.pointIndex : p.pointNumber;
      trigger("select", { index: index, selected: true,
                          value: { x: p.x, y: p.y, z: p.z === undefined ? null : p.z,
                                   text: p.text === undefined ? null : p.text, curve: p.curveNumber } });
    });
  }
  function draw() {
    scheduled = false;
    attach();
    var value = props.value;
    if (value === drawnFor && drawnNarrow === (width() < NARROW)) return;
    if (!value) { figure = null; drawnFor = value; if (gd._fullLayout) window.Plotly.purge(gd); gd.classList.add("pf-empty"); return; }
    var w = width();
    if (!w) return;  // not on screen: drawn when it gets a width (the ResizeObserver below)
    observe();
    if (value !== drawnFor && !near()) {  // far away: drawn as it nears (the observer above)
      gd.classList.add("pf-stale");
      recheck();
      return;
    }
    if (value !== drawnFor) figure = parse(value);
    drawnFor = value; drawnNarrow = w < NARROW;
    gd.classList.remove("pf-empty", "pf-stale");
    var layout = fit(figure.layout, w);  // a copy on a narrow screen (the server's own on a wide one)
    Promise.resolve(window.Plotly.react(gd, barOnTop(named(figure.data, w), layout, w), layout, CONFIG))
      .then(function () { listen(); settle(); });
  }
  // On a phone, once drawn: a legend laid under the plot by a share of the plot's height (legend.y -0.3) came up over
  // the x axis's labels and title (the plot is shorter there), and a tall legend and title could squeeze the plot
  // itself (the twins' curve: 66 px of 480). Measured, then one relayout: the legend goes to the figure's bottom edge
  // (container units, so it no longer moves with the plot's height), the bottom margin holds the axis's texts and the
  // legend, and the figure grows so the plot keeps at least MIN_PLOT_PX.
  var MIN_PLOT_PX = 160, GAP_PX = 6;
  function settle() {
    var full = gd._fullLayout, box = gd.querySelector("g.legend");
    if (!full || width() >= NARROW) return;
    var size = full._size, lg = full.legend, top = gd.getBoundingClientRect().top, below = size.t + size.h;
    var under = box && lg && (lg.yref || "paper") === "paper" && lg.y < 0;
    var L = under ? box.getBoundingClientRect() : null, depth = 0, overlap = false;
    if (under) gd.querySelectorAll("g[class$='tick'] > text, g[class^='g-x'][class$='title'] > text").forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (!r.width) return;
      depth = Math.max(depth, r.bottom - top - below);  // how far the x axis's labels and title reach below the plot
      if (r.bottom + GAP_PX > L.top && r.top < L.bottom && r.right > L.left && r.left < L.right) overlap = true;
    });
    if (!overlap && size.h >= MIN_PLOT_PX) return;
    var change = {}, b = size.b;
    if (under) {
      b = Math.ceil(depth + GAP_PX + L.height + 8);
      change = { "legend.yref": "container", "legend.y": 0, "legend.yanchor": "bottom", "margin.b": b };
    }
    change.height = Math.round(Math.max(full.height - size.b + b, size.t + MIN_PLOT_PX + b));
    window.Plotly.relayout(gd, change);
  }
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    queueMicrotask(draw);
  }
  var resizeWait = null;
  new ResizeObserver(function () {
    var w = width();
    if (!w) return;
    if (props.value !== drawnFor || drawnNarrow !== (w < NARROW)) { schedule(); return; }
    var full = gd._fullLayout;
    if (!full || Math.abs(full.width - w) <= 1 || (figure && figure.layout.width && !drawnNarrow)) return;
    clearTimeout(resizeWait);  // a window being dragged settles first
    resizeWait = setTimeout(function () {
      if (gd._fullLayout && Math.abs(gd._fullLayout.width - width()) > 1) window.Plotly.Plots.resize(gd);
    }, 100);
  }).observe(element);
  watch("value", schedule);
  schedule();
})();
