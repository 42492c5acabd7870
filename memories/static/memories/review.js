// The review queue's keys: j/k move between rows, e edits the row's text, a approves, r rejects,
// u undoes the last decision. After a decision the list opens on the next row (#candidate-<id>),
// and that row takes the focus, so the reviewer goes on where they were.
(function () {
  "use strict";
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("#result_list tbody tr")); }
  var current = -1;
  function select(index, focus) {
    var all = rows();
    if (!all.length) { return; }
    current = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (row, i) { row.classList.toggle("review-current", i === current); });
    all[current].scrollIntoView({block: "nearest"});
    var card = all[current].querySelector(".review-card");
    if (focus && card) { card.focus({preventScroll: true}); }
  }
  function press(selector) {
    var row = rows()[current];
    var button = row && row.querySelector(selector);
    if (button) { button.click(); }
  }
  document.addEventListener("keydown", function (event) {
    if (!document.getElementById("review-keys")) { return; }
    var typing = event.target && (event.target.tagName === "INPUT" || event.target.tagName === "TEXTAREA" ||
                                  event.target.tagName === "SELECT");
    if (typing) {
      if (event.key === "Escape") { event.target.blur(); }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.key === "j" || event.key === "ArrowDown") { select(current + 1, true); event.preventDefault(); }
    else if (event.key === "k" || event.key === "ArrowUp") { select(current - 1, true); event.preventDefault(); }
    else if (event.key === "a") { press(".review-approve"); }
    else if (event.key === "r") { press(".review-reject"); }
    else if (event.key === "u") {
      var undo = document.querySelector("#review-undo button");
      if (undo) { undo.click(); }
    }
    else if (event.key === "e") {
      var row = rows()[current];
      var input = row && row.querySelector(".review-text");
      if (input) { input.focus(); input.select(); event.preventDefault(); }
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    var all = rows();
    if (!all.length) { return; }
    var wanted = window.location.hash.indexOf("#candidate-") === 0 ?
      document.getElementById(window.location.hash.slice(1)) : null;
    var index = wanted ? all.findIndex(function (row) { return row.contains(wanted); }) : -1;
    select(index >= 0 ? index : 0, index >= 0);
  });
}());
