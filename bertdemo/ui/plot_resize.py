"""A figure is drawn once, not twice: a page script that skips plotly's re-layout when nothing moved.

Gradio draws each figure with ``Plotly.react`` and then calls ``Plotly.Plots.resize``, which waits
100 ms and lays the whole figure out again (every axis, label and cell: a second full drawing) for
any figure that does not fix both its width and its height, as the app's figures do, since they
fill their panel. ``react`` has just fitted the figure to its panel, so that second drawing
repeats the first unless the panel's size changed in the meantime. The script (for
``launch(head=...)``, after :data:`bertdemo.ui.phone.SCRIPT`, whose ``Plotly`` hook it keeps) wraps
``Plots.resize``: after the same 100 ms it compares the panel's size with the figure's and calls
plotly's own resize only when they differ (a window resized, a panel shown or reflowed). Nothing
of a figure's data or layout is touched.
"""

from __future__ import annotations

SCRIPT = """
<script>
(function () {
  "use strict";
  var WAIT_MS = 100;  // plotly's own wait before a resize (a window being dragged settles first)
  function install(P) {
    if (!P || P.__sameSizeResize || !P.Plots || typeof P.Plots.resize !== "function") return P;
    var resize = P.Plots.resize;
    P.Plots.resize = function (gd) {
      var el = typeof gd === "string" ? document.getElementById(gd) : gd;
      if (!el || el.nodeType !== 1) return resize.apply(this, arguments);
      var self = this, args = arguments;
      clearTimeout(el.__sameSizeTimer);
      return new Promise(function (done, fail) {
        el.__sameSizeTimer = setTimeout(function () {
          var full = el._fullLayout, own = el.layout || {}, style = window.getComputedStyle(el);
          var w = parseFloat(style.width), h = parseFloat(style.height);
          var same = full && w > 0 && Math.abs(w - full.width) <= 1 &&
                     (own.height || Math.abs(h - full.height) <= 1);
          if (same) { done(el); return; }
          resize.apply(self, args).then(done, fail);
        }, WAIT_MS);
      });
    };
    P.__sameSizeResize = true;
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
