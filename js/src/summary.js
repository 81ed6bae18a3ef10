// @ts-check
// nnx_lab model summary: an anywidget front end for SummaryView. One row per module call, as a
// tree (collapsible), sortable by params, FLOPs, bytes and output bytes (among siblings),
// filterable by path or class, with a bar per row showing its share of the model's FLOPs. Built
// on the viewer's windowed table (shared/table.js). Uses only anywidget's model API (get, on,
// off), and puts every user string into the page as text.

import { h, setText } from "./shared/dom.js";
import { sideScroll } from "./shared/sidescroll.js";
import { createWindowedTable, drawWindow, setColspan, watchWindow } from "./shared/table.js";
import { tableFit } from "./shared/tablefit.js";
import {
  COLUMNS,
  PATH_MIN_WIDTH,
  allParents,
  columnsFor,
  headerTitle,
  nextSort,
  ownPath,
  prepare,
  share,
  showingText,
  visibleRows,
} from "./summary/data.js";
import { summaryCss } from "./summary/styles.js";

const INDENT = 14;

/**
 * @typedef {object} SummaryTraits the widget's synced traits (nnx_lab/widgets/summary.py, typed by traits.py)
 * @property {import("./shared/wire").SummaryPayload} summary
 */

/** @param {import("./shared/model").RenderProps<SummaryTraits>} props */
function render({ model, el }) {
  const doc = el.ownerDocument || document;
  const cleanups = [];
  let payload = {};
  let prep = prepare({});
  let cols = [];
  let query = "";
  let sort = null;
  let collapsed = new Set();
  let items = [];
  let matched = new Set();
  let rendered = new Map();

  const title = h(doc, "div", { class: "nnx-sum-title" });
  const head = h(doc, "div", { class: "nnx-sum-head" });
  const filter = h(doc, "input", {
    type: "search",
    class: "nnx-sum-filter",
    placeholder: "filter: path or class",
    "aria-label": "filter module calls",
  });
  const expandAll = h(doc, "button", { type: "button", class: "nnx-sum-expand" }, "expand all");
  const collapseAll = h(doc, "button", { type: "button", class: "nnx-sum-collapse" }, "collapse all");
  const showing = h(doc, "span", { class: "nnx-sum-showing", role: "status" });
  const tools = h(doc, "div", { class: "nnx-sum-tools" }, filter, expandAll, collapseAll, showing);
  const toolsEnd = h(doc, "span", { class: "nnx-sum-tools-end" });
  tools.append(toolsEnd);
  const colgroup = h(doc, "colgroup");
  const headRow = h(doc, "tr");
  const thead = h(doc, "thead", null, headRow);
  const { scroller, table, empty, spacers } = createWindowedTable(doc, {
    tableClass: "nnx-sum-table",
    colgroup,
    thead,
  });
  const side = sideScroll(doc, scroller);
  const root = h(doc, "div", { class: "nnx-lab-summary-view" });
  // the columns for the output's width: the least important fold behind "+N columns" (issue 35)
  const fit = tableFit(doc, {
    root,
    scroller,
    minWidth: PATH_MIN_WIDTH,
    onChange: () => {
      fillHeader();
      relayout();
    },
  });
  toolsEnd.append(fit.picker);
  root.append(h(doc, "style", null, summaryCss()), title, head, tools, side.el);
  el.replaceChildren(root);

  function fillHeader() {
    cols = fit.shown(columnsFor(payload));
    colgroup.replaceChildren(
      ...cols.map((c) => h(doc, "col", { class: `k-${c.id}`, style: c.width ? `width:${c.width}px` : null })),
    );
    headRow.replaceChildren(
      ...cols.map((c) => {
        const on = sort && sort.column === c.id;
        const arrow = on ? (sort.dir === "desc" ? "\u25BC" : "\u25B2") : "";
        return h(
          doc,
          "th",
          {
            "data-col": c.id,
            class: [c.num ? "num" : "", c.value ? "sortable" : ""].join(" ").trim(),
            scope: "col",
            title: headerTitle(c),
            "aria-sort": on ? (sort.dir === "desc" ? "descending" : "ascending") : null,
          },
          h(doc, "span", { class: "lbl" }, c.label),
          h(doc, "span", { class: "arrow" }, arrow),
        );
      }),
    );
    table.style.minWidth = `${cols.reduce((s, c) => s + (c.width || PATH_MIN_WIDTH), 0)}px`;
    setColspan(spacers, cols.length);
  }

  function cell(c, r, i) {
    const text = r[`${c.id}_text`] ?? r[c.id] ?? "";
    if (c.id === "path") {
      const parent = prep.kids[i].length > 0;
      const open = parent && (query.trim() !== "" || !collapsed.has(i));
      return h(
        doc,
        "td",
        { class: "c-path", title: r.path_text, style: `padding-left:${6 + (Number(r.depth) || 0) * INDENT}px` },
        h(doc, "span", { class: "tog" }, parent ? (open ? "\u25BE" : "\u25B8") : ""),
        ownPath(prep, i),
      );
    }
    if (c.id === "flops") {
      const pct = 100 * share(prep, i);
      return h(
        doc,
        "td",
        {
          class: "c-flops num",
          title: `${text}: ${r.flops_exact} FLOPs, ${pct.toFixed(1)}% of the model's${r.flops_note ? `; ${r.flops_note}` : ""}`,
        },
        h(doc, "span", { class: "bar", style: `width:${pct.toFixed(2)}%` }),
        h(doc, "span", { class: "v" }, text),
      );
    }
    // a cell's tooltip: the row's `<id>_title` when Python sends one (the params cell: every Variable type)
    const title = r[`${c.id}_title`] || text;
    return h(doc, "td", { class: `c-${c.id}${c.num ? " num" : ""}`, title: String(title) }, String(text));
  }

  function rowEl(i) {
    const r = prep.rows[i];
    const tr = h(doc, "tr", { class: "nnx-sum-row", "data-row": i, "data-path": r.path_text });
    if (prep.kids[i].length) {
      tr.classList.add("nnx-sum-parent");
      tr.setAttribute("aria-expanded", query.trim() !== "" || !collapsed.has(i) ? "true" : "false");
    }
    if (matched.has(i)) tr.classList.add("match");
    for (const c of cols) tr.appendChild(cell(c, r, i));
    return tr;
  }

  const windowing = watchWindow(scroller, {
    viewportHeight: () => Math.max(0, (scroller.clientHeight || 460) - (thead.offsetHeight || 24)),
    count: () => items.length,
    draw: (first, last, total) => {
      rendered = drawWindow(spacers, items, rendered, rowEl, first, last, total);
      side.edges();
    },
  });
  cleanups.push(
    () => windowing.destroy(),
    () => side.destroy(),
    () => fit.destroy(),
  );

  function relayout() {
    const out = visibleRows(prep, { query, collapsed, sort });
    items = out.items;
    matched = new Set();
    if (out.matches >= 0) {
      const q = query.trim().toLowerCase().split(/\s+/);
      for (const i of items) {
        const hay = `${prep.rows[i].path_text} ${prep.rows[i].cls}`.toLowerCase();
        if (q.every((w) => hay.includes(w))) matched.add(i);
      }
    }
    setText(showing, showingText(prep, items.length, out.matches, query));
    const msg = prep.n === 0 ? "no module calls" : items.length === 0 ? "no module call matches" : "";
    empty.hidden = !msg;
    setText(empty, msg);
    rendered = new Map();
    windowing.refresh(true);
  }

  function onSummary() {
    payload = model.get("summary") || {};
    const fresh = prepare(payload);
    if (fresh.n !== prep.n) collapsed = new Set(); // a new summary: everything open
    prep = fresh;
    const present = columnsFor(payload);
    fit.set(present, new Set(present.map((c) => c.id)));
    setText(title, payload.title || "");
    head.replaceChildren(
      ...(payload.header || []).map((line) =>
        h(doc, "div", { class: String(line).includes("computing") ? "pending" : null }, String(line)),
      ),
    );
    fillHeader();
    relayout();
  }

  filter.addEventListener("input", () => {
    query = filter.value || "";
    relayout();
  });
  expandAll.addEventListener("click", () => {
    collapsed = new Set();
    relayout();
  });
  collapseAll.addEventListener("click", () => {
    // the model's row stays open: its direct calls are the useful overview
    collapsed = allParents(prep);
    for (const i of prep.roots) collapsed.delete(i);
    relayout();
  });
  thead.addEventListener("click", (/** @type {import("./shared/dom.js").On} */ ev) => {
    const th = ev.target && ev.target.closest ? ev.target.closest("th.sortable") : null;
    if (!th) return;
    sort = nextSort(sort, th.getAttribute("data-col"));
    fillHeader();
    relayout();
  });
  scroller.addEventListener("click", (/** @type {import("./shared/dom.js").On} */ ev) => {
    const td = ev.target && ev.target.closest ? ev.target.closest("tr.nnx-sum-parent td.c-path") : null;
    if (!td || query.trim() !== "") return;
    const i = Number(td.parentElement.getAttribute("data-row"));
    if (collapsed.has(i)) collapsed.delete(i);
    else collapsed.add(i);
    relayout();
  });

  model.on("change:summary", onSummary);
  cleanups.push(() => model.off("change:summary", onSummary));
  onSummary();

  return () => {
    for (const c of cleanups) c();
  };
}

export default { render };
