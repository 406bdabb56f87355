// slurmlite dashboard, queue page: fills a pending row's "Why is job N pending?"
// with `slurmlite explain`'s text when it is opened (GET /ui/jobs/N/explain, once
// per row). Without this file the row links to the job page's explanation.
(function () {
  "use strict";
  document.addEventListener("toggle", function (e) {
    var box = e.target;
    if (!box.open || !box.hasAttribute("data-explain") || box.hasAttribute("data-loaded")) return;
    box.setAttribute("data-loaded", "");
    var pre = box.querySelector("pre");
    fetch(box.getAttribute("data-explain"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (text) { pre.textContent = text; pre.hidden = false; })
      .catch(function () { box.removeAttribute("data-loaded"); });
  }, true);
})();
