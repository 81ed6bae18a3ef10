// @ts-check
// The windowed table every widget's front end shares: a <table> with a sticky header inside a
// scroll box; only the rows in (or near) the viewport exist, between two spacer rows that keep
// the scroll height. The viewer's tree table (table.js) and the split, capture, summary and
// compare tables build on these helpers.

import { h } from "./dom.js";
import { ROW_HEIGHT } from "./styles.js";
import { windowRange } from "./virtual.js";

const OVERSCAN = 12;

/**
 * The skeleton of a windowed table: a scroll box holding a <table> (colgroup, thead, tbody) and
 * an "empty" note; the tbody starts with the two spacer rows that `fillWindow` sizes.
 * Returns {scroller, table, tbody, empty, spacers}; set the spacers' colspan with `setColspan`.
 */
export function createWindowedTable(doc, { tableClass, colgroup, thead, colspan = 1 }) {
  const topSpacer = h(doc, "td", { colspan });
  const bottomSpacer = h(doc, "td", { colspan });
  const topTr = h(doc, "tr", { class: "nnx-spacer", "aria-hidden": "true" }, topSpacer);
  const bottomTr = h(doc, "tr", { class: "nnx-spacer", "aria-hidden": "true" }, bottomSpacer);
  const tbody = h(doc, "tbody", null, topTr, bottomTr);
  const table = h(doc, "table", { class: tableClass }, colgroup, thead, tbody);
  const empty = h(doc, "div", { class: "nnx-empty", hidden: true });
  const scroller = h(doc, "div", { class: "nnx-scroll", tabindex: "0" }, table, empty);
  const spacers = { tbody, topTr, topSpacer, bottomTr, bottomSpacer };
  return { scroller, table, tbody, empty, spacers };
}

/** Both spacer cells span `n` columns. */
export function setColspan({ topSpacer, bottomSpacer }, n) {
  topSpacer.setAttribute("colspan", n);
  bottomSpacer.setAttribute("colspan", n);
}

/**
 * Put the rendered rows `trs` (flat indices first..last-1 of `total`) between the two spacer rows
 * whose heights stand in for everything above and below, so the scroll height stays true.
 */
export function fillWindow({ tbody, topTr, topSpacer, bottomTr, bottomSpacer }, trs, first, last, total) {
  const above = first * ROW_HEIGHT;
  const below = (total - last) * ROW_HEIGHT;
  topSpacer.style.height = `${above}px`;
  bottomSpacer.style.height = `${below}px`;
  topTr.hidden = above === 0;
  bottomTr.hidden = below === 0;
  tbody.replaceChildren(topTr, ...trs, bottomTr);
}

/**
 * Draw rows first..last-1 of `items` (row keys) into the window, reusing the rows in `rendered`
 * (key -> tr) still in view and making the others with `makeRow(key)`; returns the new key -> tr map.
 */
export function drawWindow(spacers, items, rendered, makeRow, first, last, total) {
  const next = new Map();
  const trs = [];
  for (let k = first; k < last; k++) {
    const key = items[k];
    const tr = rendered.get(key) || makeRow(key);
    tr.classList.toggle("odd", k % 2 === 1);
    next.set(key, tr);
    trs.push(tr);
  }
  fillWindow(spacers, trs, first, last, total);
  return next;
}

/**
 * Keep a windowed table drawn: on scroll, on resize and on `refresh`, work out the visible window
 * and call `draw(first, last, total)` when it differs from the one drawn last (a `refresh` always
 * redraws: the contents changed). Returns {refresh(now = false), destroy()}.
 */
export function watchWindow(scroller, { viewportHeight, count, draw }) {
  let raf = 0;
  let drawn = "";
  function run() {
    raf = 0;
    const total = count();
    const { first, last } = windowRange(scroller.scrollTop, viewportHeight(), ROW_HEIGHT, total, OVERSCAN);
    const key = `${first}:${last}`;
    if (key === drawn) return;
    drawn = key;
    draw(first, last, total);
  }
  function schedule() {
    if (!raf) raf = requestAnimationFrame(run);
  }
  scroller.addEventListener("scroll", schedule, { passive: true });
  const ro =
    typeof ResizeObserver !== "undefined"
      ? new ResizeObserver(() => {
          drawn = "";
          schedule();
        })
      : null;
  if (ro) ro.observe(scroller);
  return {
    refresh(now = false) {
      drawn = "";
      if (now) run();
      else schedule();
    },
    destroy() {
      if (raf) cancelAnimationFrame(raf);
      raf = 0;
      if (ro) ro.disconnect();
      scroller.removeEventListener("scroll", schedule);
    },
  };
}
