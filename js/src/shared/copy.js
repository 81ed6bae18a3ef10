// @ts-check
// A "copy" button for a line of code: the clipboard where the page may use it, otherwise the line is
// selected for Ctrl+C; the button says which for a moment. Shared by the split report and the views panel.

import { h, setText } from "./dom.js";

const SHOWN_MS = 1800;

/** A button copying `text()` (default: `code`'s text). Returns {button, destroy}. */
export function copyButton(doc, code, className, text = () => code.textContent) {
  const button = h(doc, "button", { class: className, type: "button", title: "copy this line" }, "copy");
  let timer = 0;

  function show(label) {
    setText(button, label);
    button.setAttribute("data-state", "done");
    clearTimeout(timer);
    timer = setTimeout(() => {
      setText(button, "copy");
      button.removeAttribute("data-state");
    }, SHOWN_MS);
  }

  function select() {
    const win = doc.defaultView;
    const sel = win && typeof win.getSelection === "function" ? win.getSelection() : null;
    if (!sel || typeof doc.createRange !== "function") return false;
    const range = doc.createRange();
    range.selectNodeContents(code);
    sel.removeAllRanges();
    sel.addRange(range);
    return true;
  }

  button.addEventListener("click", () => {
    const fallback = () => show(select() ? "selected: Ctrl+C" : "copy");
    const nav = typeof navigator !== "undefined" ? navigator : null;
    if (nav && nav.clipboard && typeof nav.clipboard.writeText === "function") {
      nav.clipboard.writeText(text()).then(() => show("copied"), fallback);
    } else fallback();
  });

  return { button, destroy: () => clearTimeout(timer) };
}
