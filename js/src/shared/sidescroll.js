// @ts-check
// A table wider than its output (gradient columns beside the statistics) scrolls sideways with the
// path column held at the left (CSS: .nnx-hframe, .nnx-more-right, .scrolled-x): a shade at the right
// edge says that more columns follow, a shadow beside the path column that the table is scrolled.
import { h } from "./dom.js";

/** Wrap `scroller` in a frame with the right-edge shade; `edges()` after its content changes. */
export function sideScroll(doc, scroller) {
  const moreRight = h(doc, "div", { class: "nnx-more-right", "aria-hidden": "true", hidden: true });
  const el = h(doc, "div", { class: "nnx-hframe" }, scroller, moreRight);
  function edges() {
    const max = scroller.scrollWidth - scroller.clientWidth;
    moreRight.hidden = !(max > 1 && scroller.scrollLeft < max - 1);
    scroller.classList.toggle("scrolled-x", scroller.scrollLeft > 0);
  }
  scroller.addEventListener("scroll", edges, { passive: true });
  const observer = typeof ResizeObserver !== "undefined" ? new ResizeObserver(edges) : null;
  if (observer) observer.observe(scroller);
  return { el, edges, destroy: () => observer && observer.disconnect() };
}
