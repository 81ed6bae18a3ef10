// @ts-check
// nnx_lab comparison widget: an anywidget front end for ComparisonView. The one-line verdict on
// top, a chip per status (click: only those rows), "changed only" and a path filter, and the
// windowed tree table of shared/table.js: modules with their aggregates (click to open or close),
// each Variable with ‖a−b‖/‖a‖ and its bar, max |a−b|, cosine, fraction changed, identical;
// largest change first, structural problems on top; a header click sorts by that column. Uses only
// anywidget's model API (get, on, off), and puts every user string into the page as text.

import { h, setText } from "./shared/dom.js";
import { createWindowedTable, drawWindow, setColspan, watchWindow } from "./shared/table.js";
import { tableFit } from "./shared/tablefit.js";
import {
  COLUMNS,
  PATH_MIN_WIDTH,
  defaultOpen,
  flatten,
  matchRows,
  nextSort,
  prepare,
  showingText,
  tableWidth,
} from "./compare/data.js";
import { headerCell, moduleRow, statusChips, variableRow, verdictParts } from "./compare/parts.js";
import { compareCss } from "./compare/styles.js";

/**
 * @typedef {object} CompareTraits the widget's synced traits (nnx_lab/widgets/compare.py, typed by traits.py)
 * @property {import("./shared/wire").ComparisonPayload} comparison
 */

/** @param {import("./shared/model").RenderProps<CompareTraits>} props */
function render({ model, el }) {
  const doc = el.ownerDocument || document;
  const cleanups = [];
  let prep = prepare({});
  let open = new Uint8Array(0);
  let sort = null;
  let filters = { changedOnly: false, status: null, query: "" };
  let items = [];
  let rendered = new Map();
  let cols = COLUMNS;

  const root = h(doc, "div", { class: "nnx-lab-compare" });
  const verdict = h(doc, "div", { class: "nnx-cmp-verdict", role: "status" });
  const query = h(doc, "input", {
    class: "nnx-cmp-filter",
    type: "search",
    placeholder: "filter paths\u2026",
    spellcheck: "false",
    "aria-label": "filter variables by path",
  });
  const changedBox = h(doc, "input", { type: "checkbox", class: "nnx-cmp-changed" });
  const changedLabel = h(
    doc,
    "label",
    { class: "nnx-cmp-tool", title: "hide identical, equal and uncompared rows" },
    changedBox,
    " changed only",
  );
  const chips = h(doc, "div", { class: "nnx-cmp-chips" });
  const expandAll = h(doc, "button", { type: "button", class: "nnx-cmp-tool nnx-cmp-expand" }, "expand all");
  const collapseAll = h(doc, "button", { type: "button", class: "nnx-cmp-tool nnx-cmp-collapse" }, "collapse all");
  const showing = h(doc, "span", { class: "nnx-cmp-showing" });
  const barEnd = h(doc, "span", { class: "nnx-cmp-bar-end" });
  const bar = h(
    doc,
    "div",
    { class: "nnx-cmp-bar-row" },
    query,
    changedLabel,
    chips,
    expandAll,
    collapseAll,
    showing,
    barEnd,
  );
  const colgroup = h(doc, "colgroup");
  const headRow = h(doc, "tr");
  const thead = h(doc, "thead", null, headRow);
  const { scroller, table, empty, spacers } = createWindowedTable(doc, {
    tableClass: "nnx-cmp-table",
    colgroup,
    thead,
  });
  root.append(h(doc, "style", null, compareCss()), verdict, bar, scroller);
  el.replaceChildren(root);
  // the columns for the output's width: the least important fold behind "+N columns" (issue 35)
  const fit = tableFit(doc, {
    root,
    scroller,
    minWidth: PATH_MIN_WIDTH,
    onChange: () => {
      fillColumns();
      relayout();
    },
  });
  fit.set(COLUMNS);
  barEnd.append(fit.picker);
  cleanups.push(() => fit.destroy());

  function fillColumns() {
    cols = fit.shown(COLUMNS);
    colgroup.replaceChildren(...cols.map((c) => h(doc, "col", { class: `k-${c.id}` })));
    setColspan(spacers, cols.length);
    table.style.minWidth = `${tableWidth(cols)}px`;
  }
  fillColumns();

  const makeRow = (id) =>
    id < prep.M
      ? moduleRow(doc, prep, id, !!open[id] || !!matchRows(prep, filters), cols)
      : variableRow(doc, prep, id, cols);
  const windowing = watchWindow(scroller, {
    viewportHeight: () => Math.max(0, (scroller.clientHeight || 420) - (thead.offsetHeight || 22)),
    count: () => items.length,
    draw: (first, last, total) => {
      rendered = drawWindow(spacers, items, rendered, makeRow, first, last, total);
    },
  });
  cleanups.push(() => windowing.destroy());

  function relayout() {
    const match = matchRows(prep, filters);
    items = flatten(prep, open, sort, match);
    rendered = new Map(); // rows rebuilt: open marks and order may have changed
    headRow.replaceChildren(...cols.map((c) => headerCell(doc, c, sort)));
    chips.replaceChildren(...statusChips(doc, prep, filters.status));
    setText(showing, showingText(prep, match));
    const msg = prep.R === 0 ? "nothing to compare" : items.length === 0 ? "no Variable matches the filters" : "";
    empty.hidden = !msg;
    setText(empty, msg);
    windowing.refresh(true);
  }

  function onComparison() {
    prep = prepare(model.get("comparison") || {});
    open = defaultOpen(prep);
    verdict.classList.toggle("bad", !prep.loadable);
    verdict.replaceChildren(...verdictParts(doc, prep).filter(Boolean));
    relayout();
  }

  query.addEventListener("input", () => {
    filters = { ...filters, query: query.value };
    scroller.scrollTop = 0;
    relayout();
  });
  query.addEventListener("keydown", (ev) => ev.stopPropagation()); // notebook shortcuts stay out while typing
  changedBox.addEventListener("change", () => {
    filters = { ...filters, changedOnly: changedBox.checked };
    scroller.scrollTop = 0;
    relayout();
  });
  chips.addEventListener("click", (/** @type {import("./shared/dom.js").On} */ ev) => {
    const chip = ev.target && ev.target.closest ? ev.target.closest("button[data-status]") : null;
    if (!chip) return;
    const name = chip.getAttribute("data-status");
    filters = { ...filters, status: filters.status === name ? null : name };
    relayout();
  });
  expandAll.addEventListener("click", () => {
    open.fill(1);
    relayout();
  });
  collapseAll.addEventListener("click", () => {
    open.fill(0);
    relayout();
  });
  thead.addEventListener("click", (/** @type {import("./shared/dom.js").On} */ ev) => {
    const th = ev.target && ev.target.closest ? ev.target.closest("th[data-col]") : null;
    if (!th) return;
    sort = nextSort(sort, th.getAttribute("data-col"));
    relayout();
  });
  scroller.addEventListener("click", (/** @type {import("./shared/dom.js").On} */ ev) => {
    const tr = ev.target && ev.target.closest ? ev.target.closest("tr.nnx-cmp-module") : null;
    if (!tr || matchRows(prep, filters)) return; // while filtering every module is open
    const id = Number(tr.getAttribute("data-id"));
    if (!Number.isInteger(id) || id < 0 || id >= prep.M) return;
    open[id] = open[id] ? 0 : 1;
    relayout();
  });

  model.on("change:comparison", onComparison);
  cleanups.push(() => model.off("change:comparison", onComparison));
  onComparison();

  return () => {
    for (const c of cleanups) c();
  };
}

export default { render };
