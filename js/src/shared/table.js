// @ts-check
// The viewer's virtualized tree table: modules and Variables in the windowed table of
// windowed.js (only the rows in or near the viewport exist), sortable by a header click, with the
// rows' cells from treerows.js. Laid out for the width it is given: the least important columns
// fold into a "+N columns" picker (`picker.el`, placed by the widget) when they do not fit
// (shared/fit.js), and a cut cell shows its full text on hover.

import { h, patch, setText } from "./dom.js";
import { COLUMNS, COLUMNS_QUIET_STATUS, PATH_MIN_WIDTH, tableMinWidth } from "./columns.js";
import { createColumnPicker, fitColumns, fullTextOnHover, watchWidth } from "./fit.js";
import { ROW_HEIGHT } from "./styles.js";
import { scrollToShow } from "./virtual.js";
import { isStacked } from "./layers.js";
import { sideScroll } from "./sidescroll.js";
import { createWindowedTable, fillWindow, setColspan, watchWindow } from "./windowed.js";
import { moduleRow, variableRow } from "./treerows.js";

// The windowed-table helpers, also imported from here by the other widgets' front ends.
export { createWindowedTable, drawWindow, fillWindow, setColspan, watchWindow } from "./windowed.js";

/**
 * createTreeTable(doc, {onToggle(moduleIndex), onSort(column)}) -> table component.
 * Feed it with update({tree, items, sort, history, stat}); it draws the window on scroll.
 */
export function createTreeTable(doc, { onToggle, onSort, onDrawn, onHeatmap }) {
  const colgroup = h(doc, "colgroup", null, ...COLUMNS.map((c) => h(doc, "col", { class: `k-${c.id}` })));
  const headCells = new Map();
  const headRow = h(doc, "tr");
  for (const c of COLUMNS) {
    const th = h(doc, "th", {
      "data-col": c.id,
      class: [c.num ? "num" : "", c.sortable === false ? "" : "sortable"].join(" ").trim(),
      scope: "col",
      title: c.title || null,
    });
    const label = h(doc, "span", { class: "lbl" }, c.label);
    const arrow = h(doc, "span", { class: "arrow" });
    th.append(label, arrow);
    headCells.set(c.id, { th, label, arrow });
    headRow.appendChild(th);
  }
  const thead = h(doc, "thead", null, headRow);
  const { scroller, table, tbody, empty, spacers } = createWindowedTable(doc, {
    tableClass: "nnx-table",
    colgroup,
    thead,
    colspan: COLUMNS.length,
  });

  const side = sideScroll(doc, scroller); // wider than the output: sideways, the path column held
  const hover = fullTextOnHover(table);
  const chosen = new Map(); // column id -> true (shown) / false (folded): the user's picks
  let width = 0; // the scroll box's inner width (0 until laid out)
  const picker = createColumnPicker(doc, {
    onChange(id, on) {
      chosen.set(id, on);
      layoutColumns();
    },
  });
  const sizing = watchWidth(scroller, (w) => {
    width = w;
    layoutColumns();
  });

  let state = { tree: null, items: [], sort: null, history: null, stat: "norm" };
  let version = 0; // bumps whenever row contents may have changed
  let rendered = new Map(); // item id -> {tr, version}
  let flashId = -1;
  let flashTimer = 0;

  // --- window --------------------------------------------------------------------------------

  function headerHeight() {
    return thead.offsetHeight || 22;
  }

  function viewportHeight() {
    return Math.max(0, (scroller.clientHeight || 420) - headerHeight());
  }

  function draw(first, last, total) {
    const items = state.items;
    const next = new Map();
    const trs = [];
    for (let k = first; k < last; k++) {
      const id = items[k];
      const old = rendered.get(id);
      let tr;
      if (old && old.version === version) tr = old.tr;
      else {
        const fresh = id < state.tree.N ? moduleRow(doc, state, id) : variableRow(doc, state, id, id === flashId);
        if (old) {
          patch(old.tr, fresh);
          tr = old.tr;
        } else tr = fresh;
      }
      next.set(id, { tr, version });
      trs.push(tr);
    }
    rendered = next;
    fillWindow(spacers, trs, first, last, total);
    if (trs.length && onDrawn) onDrawn(trs.length);
  }

  const windowing = watchWindow(scroller, { viewportHeight, count: () => state.items.length, draw });

  tbody.addEventListener("click", (/** @type {import("./dom.js").On} */ ev) => {
    const heat = ev.target.closest ? ev.target.closest("button.nnx-heat") : null;
    const tr = ev.target.closest ? ev.target.closest("tr.nnx-module") || ev.target.closest("tr.nnx-group") : null;
    if (!tr || !state.tree) return;
    const id = Number(tr.getAttribute("data-id"));
    if (!Number.isInteger(id)) return;
    if (heat && onHeatmap) onHeatmap(id - state.tree.N);
    else if (id < state.tree.N || isStacked(state.tree, id - state.tree.N)) onToggle(id);
  });
  thead.addEventListener("click", (/** @type {import("./dom.js").On} */ ev) => {
    const th = ev.target.closest ? ev.target.closest("th[data-col]") : null;
    if (!th || !th.classList.contains("sortable")) return;
    onSort(th.getAttribute("data-col"));
  });

  /** Hide the columns with nothing to say and fold those that do not fit; the picker lists them. */
  function layoutColumns() {
    const hidden = state.hidden || new Set();
    const present = new Set(COLUMNS.filter((c) => !hidden.has(c.id)).map((c) => c.id));
    const columns = state.quietStatus ? COLUMNS_QUIET_STATUS : COLUMNS;
    const folded = fitColumns(columns, width, { present, chosen, minWidth: PATH_MIN_WIDTH });
    const off = new Set([...hidden, ...folded]);
    for (const c of COLUMNS) table.classList.toggle(`hide-${c.id}`, off.has(c.id));
    // The spacer rows span the shown columns only: spanning a hidden one would make it a column
    // again, without its width, and share the path column's room with it.
    setColspan(spacers, COLUMNS.length - off.size);
    table.style.minWidth = `${tableMinWidth(off)}px`;
    picker.fill(columns, { present, folded });
    side.edges();
  }

  function setHeader() {
    for (const c of COLUMNS) {
      const { th, label, arrow } = headCells.get(c.id);
      const on = state.sort && state.sort.column === c.id;
      setText(arrow, on ? (state.sort.dir === "asc" ? "\u25B2" : "\u25BC") : "");
      if (on) th.setAttribute("aria-sort", state.sort.dir === "asc" ? "ascending" : "descending");
      else th.removeAttribute("aria-sort");
      if (c.id === "spark") th.setAttribute("title", `trend of ${state.stat} over the last refreshes`);
    }
  }

  return {
    el: side.el,
    /** The "+N columns" control: the widget puts it in its toolbar. */
    picker,
    /** New state; `rows` true when row contents changed (else only the window moves). */
    update(next, { rows = true, sync = false } = {}) {
      state = { ...state, ...next };
      layoutColumns();
      if (rows) version += 1;
      setHeader();
      const msg = state.emptyText || "";
      empty.hidden = !msg;
      setText(empty, msg);
      windowing.refresh(sync);
      side.edges();
    },
    /** Scroll so that flat index `index` is visible and flash it. */
    reveal(index) {
      const vh = viewportHeight();
      scroller.scrollTop = scrollToShow(index, scroller.scrollTop, vh, ROW_HEIGHT);
      flashId = state.items[index];
      version += 1;
      windowing.refresh(true);
      clearTimeout(flashTimer);
      flashTimer = setTimeout(() => {
        flashId = -1;
        version += 1;
        windowing.refresh();
      }, 1200);
    },
    destroy() {
      clearTimeout(flashTimer);
      side.destroy();
      sizing.destroy();
      picker.destroy();
      hover.destroy();
      windowing.destroy();
    },
  };
}
