// slurmlite dashboard: live refresh, nothing else. The pages work without this file.
// Listens to /ui/events (server-sent "changed") and reloads the page; where
// EventSource is missing or keeps failing, polls /ui/version every 5 s instead.
// A page with an open <details> or a focused form field is not reloaded under the
// user's hands: a "changed" then shows a notice with a reload link.
(function () {
  "use strict";
  var body = document.body;
  var since = body.getAttribute("data-version");
  if (since === null || body.hasAttribute("data-static")) return;

  function busy() {
    var a = document.activeElement;
    if (a && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT")) return true;
    return document.querySelector("details[open]") !== null;
  }

  function changed() {
    if (!busy()) { window.location.reload(); return; }
    var note = document.getElementById("stale");
    if (note) note.hidden = false;
  }

  function poll() {
    window.setInterval(function () {
      fetch("/ui/version", { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (v) { if (v && String(v.version) !== since) { since = String(v.version); changed(); } })
        .catch(function () {});
    }, 5000);
  }

  if (!window.EventSource) { poll(); return; }
  var failures = 0;
  var source = new EventSource("/ui/events?since=" + encodeURIComponent(since));
  source.addEventListener("changed", function (e) { since = e.data; changed(); });
  source.onopen = function () { failures = 0; };
  source.onerror = function () {
    failures += 1;
    if (failures >= 3) { source.close(); poll(); }
  };
})();
