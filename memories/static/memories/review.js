// The review queue's keys: j/k move between rows, e edits the row's text, a approves, r rejects.
(function () {
  "use strict";
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("#result_list tbody tr")); }
  var current = -1;
  function select(index) {
    var all = rows();
    if (!all.length) { return; }
    current = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (row, i) { row.classList.toggle("review-current", i === current); });
    all[current].scrollIntoView({block: "nearest"});
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
    if (event.key === "j" || event.key === "ArrowDown") { select(current + 1); event.preventDefault(); }
    else if (event.key === "k" || event.key === "ArrowUp") { select(current - 1); event.preventDefault(); }
    else if (event.key === "a") { press(".review-approve"); }
    else if (event.key === "r") { press(".review-reject"); }
    else if (event.key === "e") {
      var row = rows()[current];
      var input = row && row.querySelector(".review-text");
      if (input) { input.focus(); input.select(); event.preventDefault(); }
    }
  });
  document.addEventListener("DOMContentLoaded", function () { if (rows().length) { select(0); } });
}());
