/* Execution search: the filter pickers, the copy buttons of the ids, and row selection for
   bulk actions. Everything works without this script (plain checkboxes, full ids in the
   links' titles); it only adds the name filter, the copy buttons and the selection count. */
(function () {
  "use strict";

  // Workflow-name picker: typing narrows the chips; chosen names stay visible.
  document.querySelectorAll("fieldset.picker").forEach(function (picker) {
    var filter = picker.querySelector(".picker-filter");
    var chips = Array.prototype.slice.call(picker.querySelectorAll("label.chip"));
    picker.addEventListener("change", function (e) {
      var chip = e.target.closest("label.chip");
      if (chip) { chip.classList.toggle("on", e.target.checked); }
    });
    if (!filter || chips.length < 2) { return; }
    filter.hidden = false;
    filter.addEventListener("input", function () {
      var words = filter.value.trim().toLowerCase();
      chips.forEach(function (chip) {
        var box = chip.querySelector("input");
        var text = chip.textContent.trim().toLowerCase();
        chip.hidden = !!words && !box.checked && text.indexOf(words) < 0;
      });
    });
    filter.addEventListener("keydown", function (e) {
      if (e.key !== "Enter") { return; }
      // Enter ticks the only name left, instead of submitting the form
      var shown = chips.filter(function (c) { return !c.hidden && !c.querySelector("input").checked; });
      if (shown.length === 1) {
        e.preventDefault();
        var box = shown[0].querySelector("input");
        box.checked = true;
        shown[0].classList.add("on");
        filter.value = "";
        filter.dispatchEvent(new Event("input"));
      }
    });
  });

  // Copy buttons beside the shortened ids.
  function copied(button) {
    button.classList.add("copied");
    button.title = "Copied";
    setTimeout(function () { button.classList.remove("copied"); button.title = "Copy the workflow id"; }, 1500);
  }
  function copyText(text, button) {
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { copied(button); }, function () { fallback(text, button); });
    } else {
      fallback(text, button);
    }
  }
  function fallback(text, button) {  // plain HTTP on another host: no Clipboard API
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try { if (document.execCommand("copy")) { copied(button); } } catch (ignored) { /* nothing to do */ }
    document.body.removeChild(area);
  }
  document.querySelectorAll("button.copy-id").forEach(function (b) {
    b.hidden = false;
    b.addEventListener("click", function () { copyText(b.dataset.copy, b); });
  });

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
