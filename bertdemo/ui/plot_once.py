"""A figure is drawn once per answer: a page script that skips the two drawings Gradio's plot
component asks plotly for and nobody sees.

Gradio's ``gr.Plot`` re-creates its plot element for every new figure (a keyed block), and draws
each figure with ``Plotly.react`` followed by ``Plotly.Plots.resize``. So for one answer plotly drew
every figure three times: into the element about to be discarded (the old instance still sees the
new value while the update runs), into the new element, and once more 100 ms later, when ``resize``
lays the whole figure out again at the size ``react`` has just fitted it to (for figures that fill
their panel, i.e. do not fix both width and height, as the app's figures do).

The script (for ``launch(head=...)``, after :data:`bertdemo.ui.phone.SCRIPT`, whose ``Plotly`` hook
it keeps) wraps both calls:

- ``react`` draws at the end of the current task (a microtask), and only into an element still on
  the page, once (the last call for that element wins);
- ``Plots.resize`` waits the same 100 ms, then calls plotly's own resize only when the element's
  size differs from the figure's (a window resized, a panel shown or reflowed).

Nothing of a figure's data or layout is touched.
"""

from __future__ import annotations

SCRIPT = """
<script>
(function () {
  "use strict";
  var WAIT_MS = 100;  // plotly's own wait before a resize (a window being dragged settles first)
  function element(gd) { return typeof gd === "string" ? document.getElementById(gd) : gd; }
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
          Promise.resolve(react.apply(self, args)).then(done, fail);
        });
      });
    };
    P.Plots.resize = function (gd) {
      var el = element(gd), self = this, args = arguments;
      if (!el || el.nodeType !== 1) return resize.apply(self, args);
      clearTimeout(el.__sizeCheck);
      return new Promise(function (done, fail) {
        el.__sizeCheck = setTimeout(function () {
          if (!el.isConnected) { done(el); return; }
          var full = el._fullLayout, own = el.layout || {}, style = window.getComputedStyle(el);
          var w = parseFloat(style.width), h = parseFloat(style.height);
          var same = full && w > 0 && Math.abs(w - full.width) <= 1 && (own.height || Math.abs(h - full.height) <= 1);
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
