// A table cell that holds one number never breaks inside it: 1.1e-112 is not "1.1e-" over
// "112" (browsers break after a hyphen). Such a cell gets the class attnproof-number
// (white-space: nowrap in layout.css); a table too wide for the column then scrolls in its
// container. tests/test_browser.py reads NUMBER from this file and checks every page.
const NUMBER = /^[-+\u2212]?(\d[\d,]*(\.\d*)?|\.\d+)([eE][-+\u2212]?\d+)?(\s?%)?$/;
document.addEventListener("DOMContentLoaded", () => {
  for (const cell of document.querySelectorAll(".bd-article :is(td, th)")) {
    if (NUMBER.test(cell.textContent.trim())) cell.classList.add("attnproof-number");
  }
});
