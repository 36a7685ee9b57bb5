// Progressive: the pages work without this. It shows the copy buttons and copies the text of
// the element a button names (data-copy="<id>").
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button.copy-button").forEach(function (button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target || !navigator.clipboard) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(target.textContent.trim()).then(function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      });
    });
  });
});
