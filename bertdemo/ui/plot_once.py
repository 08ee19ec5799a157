"""A figure is drawn once per answer, in place: a page script that makes plotly redraw one element per
plot instead of laying out a new one for every answer, and skips the drawings nobody sees.

Gradio's ``gr.Plot`` re-creates its plot element for every new figure (a keyed block), and draws
each figure with ``Plotly.react`` followed by ``Plotly.Plots.resize``. So for one answer plotly drew
every figure three times: into the element about to be discarded (the old instance still sees the
new value while the update runs), into the new element from scratch (its axes, grid and layers
built anew), and once more 100 ms later, when ``resize`` lays the whole figure out again at the
size ``react`` has just fitted it to (for figures that fill their panel, i.e. do not fix both width
and height, as the app's figures do).

The script (for ``launch(head=...)``, after :data:`bertdemo.ui.phone.SCRIPT`, whose ``Plotly`` hook
it keeps) wraps both calls:

- ``react`` draws at the end of the current task (a microtask), only for an element still on the
  page, once (the last call for that element wins), and into **the plot's own drawing element**: a
  child the script keeps per plot and moves into each new element Gradio makes. Plotly's ``react``
  on an element that already holds a figure updates it (the neuron view: about 32 ms against 73 ms
  laid out anew, in this machine's Chromium);
- ``Plots.resize`` waits the same 100 ms, then calls plotly's own resize only when the drawing
  element's size differs from the figure's (a window resized, a panel shown or reflowed).

Nothing of a figure's data or layout is touched.
"""

from __future__ import annotations

SCRIPT = """
<script>
(function () {
  "use strict";
  var WAIT_MS = 100;  // plotly's own wait before a resize (a window being dragged settles first)
  function element(gd) { return typeof gd === "string" ? document.getElementById(gd) : gd; }
  // the element plotly draws this plot into: made once per plot (kept on the element that holds
  // Gradio's plot elements) and moved into the newest of them
  function drawing(el) {
    if (el.__isDrawing) return el;  // a call on the drawing element itself (a phone refit, plotly's own resize)
    var holder = el.parentNode, gd = el.__drawing || (holder && holder.__drawing);
    if (!gd) { gd = document.createElement("div"); gd.className = "plot-drawing"; gd.__isDrawing = true; }
    if (holder) holder.__drawing = gd;
    el.__drawing = gd;
    if (gd.parentNode !== el) el.appendChild(gd);
    return gd;
  }
  function install(P) {
    if (!P || P.__drawnOnce || typeof P.react !== "function" || !P.Plots || typeof P.Plots.resize !== "function") {
      return P;
    }
    var react = P.react, resize = P.Plots.resize;
    P.react = function (gd) {
      var el = element(gd), self = this, args = arguments;
      if (!el || el.nodeType !== 1) return react.apply(self, args);
      el.__nextDraw = args;
      return new Promise(function (done, fail) {
        queueMicrotask(function () {
          if (el.__nextDraw !== args || !el.isConnected) { done(el); return; }  // superseded, or discarded
          el.__nextDraw = null;
          var call = Array.prototype.slice.call(args);
          call[0] = drawing(el);
          Promise.resolve(react.apply(self, call)).then(done, fail);
        });
      });
    };
    P.Plots.resize = function (gd) {
      var el = element(gd), self = this, args = Array.prototype.slice.call(arguments);
      if (!el || el.nodeType !== 1) return resize.apply(self, args);
      clearTimeout(el.__sizeCheck);
      return new Promise(function (done, fail) {
        el.__sizeCheck = setTimeout(function () {
          if (!el.isConnected) { done(el); return; }
          if (el.__drawing) { el = el.__drawing; args[0] = el; }  // drawn by then: its react ran in a microtask
          var full = el._fullLayout, own = el.layout || {}, style = window.getComputedStyle(el);
          var w = parseFloat(style.width), h = parseFloat(style.height);
          if (!full) { done(el); return; }  // never drawn (its answer was superseded): nothing to fit
          var same = w > 0 && Math.abs(w - full.width) <= 1 && (own.height || Math.abs(h - full.height) <= 1);
          if (same) { done(el); return; }
          resize.apply(self, args).then(done, fail);
        }, WAIT_MS);
      });
    };
    P.__drawnOnce = true;
    return P;
  }
  if (window.Plotly) { install(window.Plotly); return; }
  var before = Object.getOwnPropertyDescriptor(window, "Plotly"), current;
  Object.defineProperty(window, "Plotly", {
    configurable: true,
    get: function () { return before && before.get ? before.get() : current; },
    set: function (v) {
      v = install(v);
      if (before && before.set) before.set(v); else current = v;
    },
  });
})();
</script>
"""
