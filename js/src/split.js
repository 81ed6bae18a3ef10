// @ts-check
// nnx_lab split report: an anywidget front end for SplitReportView. Which Variables each filter
// of an `nnx.split` takes (filled mark), which it matches but an earlier filter took (hollow
// mark), and what no filter matched (the remainder). Uses only anywidget's model API (get, on,
// off), and puts every user string into the page as text.

import { copyButton } from "./shared/copy.js";
import { h, setText } from "./shared/dom.js";
import { filterCss, splitCss } from "./split/styles.js";
import {
  PATH_MIN_WIDTH,
  REST,
  columns,
  prepare,
  showingText,
  tableWidth,
  toggleActive,
  visibleRows,
} from "./split/data.js";
import { createProblems, headParts, headerCell, rowEl } from "./split/parts.js";
import { createWindowedTable, drawWindow, setColspan, watchWindow } from "./shared/table.js";
import { tableFit } from "./shared/tablefit.js";

/**
 * @typedef {object} SplitTraits the widget's synced traits (nnx_lab/widgets/split.py, typed by traits.py)
 * @property {import("./shared/wire").SplitReport} report
 */

/** @param {import("./shared/model").RenderProps<SplitTraits>} props */
function render({ model, el }) {
  const doc = el.ownerDocument || document;
  const cleanups = [];

  let prep = prepare({});
  let cols = [];
  let active = null; // null | filter index | REST
  let items = []; // row indexes shown
  let rendered = new Map(); // row index -> tr (only the window)

  const root = h(doc, "div", { class: "nnx-lab-split-view" });
  const filterStyle = h(doc, "style");
  const head = h(doc, "div", { class: "nnx-split-head" });
  const codeText = h(doc, "code", { class: "nnx-split-code-text" });
  const copy = copyButton(doc, codeText, "nnx-split-copy", () => prep.code);
  const codeBox = h(doc, "div", { class: "nnx-split-code" }, codeText, copy.button);
  const problems = createProblems(doc);
  const showing = h(doc, "div", { class: "nnx-split-showing", role: "status" });
  const colgroup = h(doc, "colgroup");
  const headRow = h(doc, "tr");
  const thead = h(doc, "thead", null, headRow);
  const { scroller, table, empty, spacers } = createWindowedTable(doc, {
    tableClass: "nnx-split-table",
    colgroup,
    thead,
  });
  // the columns for the output's width: the least important fold behind "+N columns" (issue 35)
  const fit = tableFit(doc, {
    root,
    scroller,
    minWidth: PATH_MIN_WIDTH,
    onChange: () => {
      rendered = new Map();
      fillTable();
      relayout();
    },
  });
  cleanups.push(() => fit.destroy());
  const showingRow = h(doc, "div", { class: "nnx-split-showing-row" }, showing, fit.picker);
  root.append(h(doc, "style", null, splitCss()), filterStyle, head, codeBox, problems.el, showingRow, scroller);
  el.replaceChildren(root);

  function fillTable() {
    const all = columns(prep);
    fit.set(all);
    cols = fit.shown(all);
    filterStyle.replaceChildren(filterCss(prep.filters.length));
    colgroup.replaceChildren(
      ...cols.map((c) => h(doc, "col", { class: `k-${c.id}`, style: c.width ? `width:${c.width}px` : null })),
    );
    headRow.replaceChildren(...cols.map((c) => headerCell(doc, prep, c, active)));
    table.style.minWidth = `${tableWidth(cols)}px`;
    setColspan(spacers, cols.length);
  }

  function markHeaders() {
    for (const th of headRow.children) {
      const key = th.getAttribute("data-filter");
      if (key === null) continue;
      const on = active !== null && String(active) === key;
      th.setAttribute("aria-pressed", on ? "true" : "false");
    }
  }

  const windowing = watchWindow(scroller, {
    viewportHeight: () => Math.max(0, (scroller.clientHeight || 420) - (thead.offsetHeight || 48)),
    count: () => items.length,
    draw: (first, last, total) => {
      rendered = drawWindow(spacers, items, rendered, (r) => rowEl(doc, prep, cols, r), first, last, total);
    },
  });
  cleanups.push(() => windowing.destroy());

  function relayout() {
    items = visibleRows(prep, active);
    setText(showing, showingText(prep, active, items.length));
    const msg = prep.n === 0 ? "no Variables" : items.length === 0 ? "no Variable here" : "";
    empty.hidden = !msg;
    setText(empty, msg);
    markHeaders();
    scroller.scrollTop = 0;
    windowing.refresh(true);
  }

  function onReport() {
    prep = prepare(model.get("report") || {});
    if (active !== null && active !== REST && !prep.filters[active]) active = null;
    if (active === REST && prep.rest.count === 0) active = null;
    rendered = new Map();
    setText(codeText, prep.code);
    codeBox.hidden = !prep.code;
    head.replaceChildren(...headParts(doc, prep));
    problems.fill(prep.problems);
    fillTable();
    relayout();
  }

  thead.addEventListener("click", (/** @type {import("./shared/dom.js").On} */ ev) => {
    const th = ev.target && ev.target.closest ? ev.target.closest("th[data-filter]") : null;
    if (!th) return;
    const key = th.getAttribute("data-filter");
    active = toggleActive(active, key === REST ? REST : Number(key));
    relayout();
  });

  model.on("change:report", onReport);
  cleanups.push(() => model.off("change:report", onReport));
  onReport();

  return () => {
    for (const c of cleanups) c();
    copy.destroy();
  };
}

export default { render };
