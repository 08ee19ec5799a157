// A tap shows what a hover shows (bertdemo/ui/layout.py puts this file in the page's head): the title
// of a token chip or a mask-grid cell, in a small tip, for 4 s. A phone has no hover.
(function () {
  "use strict";
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
})();
