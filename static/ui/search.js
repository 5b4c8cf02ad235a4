/* Execution search: row selection for bulk actions. */
(function () {
  "use strict";
  var form = document.getElementById("bulk-form");
  if (!form) { return; }
  var all = document.getElementById("select-all");
  var button = document.getElementById("bulk-button");
  var action = document.getElementById("bulk-action");
  var counter = document.getElementById("selected-count");
  function checks() { return Array.prototype.slice.call(form.querySelectorAll("input.row-check")); }
  function update() {
    var n = checks().filter(function (c) { return c.checked; }).length;
    if (counter) { counter.textContent = n + " selected"; }
    if (button) { button.disabled = !(n > 0 && action && action.value); }
  }
  if (all) {
    all.addEventListener("change", function () {
      checks().forEach(function (c) { c.checked = all.checked; });
      update();
    });
  }
  // a failure cluster's "select on this page": tick the rows of that cluster
  document.querySelectorAll("button.cluster-select").forEach(function (b) {
    b.addEventListener("click", function () {
      checks().forEach(function (c) {
        var row = c.closest("tr");
        c.checked = !!row && row.dataset.cluster === b.dataset.cluster;
      });
      update();
    });
  });
  form.addEventListener("change", update);
  update();
})();
