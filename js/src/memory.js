// @ts-check
// nnx_lab memory ledger: an anywidget front end for MemoryView. A tree device -> holder -> group
// (Variable type, optimizer entry, array), collapsible, sortable among siblings by bytes, buffers or
// name, filterable, each row's bytes with a bar against the device's limit (or, without one, its
// live arrays); the per-device total lines above; the statements that would free the most below,
// each with the bytes it returns and a copy button (nothing is run). Python writes every number.
// Uses only anywidget's model API (get, on, off), and puts every user string into the page as text.

import { copyButton } from "./shared/copy.js";
import { h, setText } from "./shared/dom.js";
import { sideScroll } from "./shared/sidescroll.js";
import { createWindowedTable, drawWindow, setColspan, watchWindow } from "./shared/table.js";
import { watchWidth } from "./shared/fit.js";
import { tableFit, tableRoom } from "./shared/tablefit.js";
import {
  COLUMNS,
  LABEL_MIN_WIDTH,
  headerTitle,
  labelNeed,
  sharedNeed,
  sharedWidth,
  holderRows,
  nextSort,
  prepare,
  share,
  showingText,
  visibleRows,
} from "./memory/data.js";
import { memoryCss } from "./memory/styles.js";

const INDENT = 14;

/**
 * @typedef {object} MemoryTraits the widget's synced traits (nnx_lab/widgets/memory.py, typed by traits.py)
 * @property {import("./shared/wire").LedgerPayload} ledger
 */

/** @param {import("./shared/model").RenderProps<MemoryTraits>} props */
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
  let copies = [];

  const title = h(doc, "div", { class: "nnx-mem-title" });
  const head = h(doc, "div", { class: "nnx-mem-head" });
  const filter = h(doc, "input", {
    type: "search",
    class: "nnx-mem-filter",
    placeholder: "filter: holder, group or kind",
    "aria-label": "filter holders",
  });
  const expandAll = h(doc, "button", { type: "button", class: "nnx-mem-expand" }, "expand all");
  const holdersOnly = h(doc, "button", { type: "button", class: "nnx-mem-collapse" }, "holders only");
  const showing = h(doc, "span", { class: "nnx-mem-showing", role: "status" });
  const toolsEnd = h(doc, "span", { class: "nnx-mem-tools-end" });
  const tools = h(doc, "div", { class: "nnx-mem-tools" }, filter, expandAll, holdersOnly, showing, toolsEnd);
  const colgroup = h(doc, "colgroup");
  const headRow = h(doc, "tr");
  const thead = h(doc, "thead", null, headRow);
  const { scroller, empty, table, spacers } = createWindowedTable(doc, {
    tableClass: "nnx-mem-table",
    colgroup,
    thead,
  });
  const side = sideScroll(doc, scroller);
  const notes = h(doc, "div", { class: "nnx-mem-notes" });
  const freeing = h(doc, "div", { class: "nnx-mem-free" });
  const root = h(doc, "div", { class: "nnx-lab-memory-view" });
  const fit = tableFit(doc, {
    root,
    scroller,
    minWidth: LABEL_MIN_WIDTH,
    onChange: () => {
      fillHeader();
      relayout();
    },
  });
  toolsEnd.append(fit.picker);
  root.append(h(doc, "style", null, memoryCss()), title, head, tools, side.el, notes, freeing);
  el.replaceChildren(root);

  function fillHeader() {
    cols = fit.shown(COLUMNS);
    colgroup.replaceChildren(...cols.map((c) => h(doc, "col", { class: `k-${c.id}` })));
    widenShared();
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
    table.style.minWidth = `${cols.reduce((s, c) => s + (c.width || LABEL_MIN_WIDTH), 0)}px`;
    setColspan(spacers, cols.length);
  }

  /** The shared column grown into the room the holders do not need (memory/data.js sharedWidth). */
  function widenShared() {
    const col = colgroup.querySelector("col.k-shared");
    if (!col) return;
    const others = cols.reduce((sum, c) => sum + (c.id === "shared" ? 0 : c.width || 0), 0);
    const width = sharedWidth(sharedNeed(prep), tableRoom(root.clientWidth), others, labelNeed(prep));
    col.setAttribute("style", `width:${width}px`);
  }
  const widths = watchWidth(root, widenShared);

  function cell(c, r, i) {
    if (c.id === "label") {
      const parent = prep.kids[i].length > 0;
      const open = parent && (query.trim() !== "" || !collapsed.has(i));
      return h(
        doc,
        "td",
        {
          class: "c-label",
          title: r.note ? `${r.label}: ${r.note}` : String(r.label),
          style: `padding-left:${6 + (Number(r.depth) || 0) * INDENT}px`,
        },
        // the arrow is CSS (::before): a cut cell's text, and its hover title, are the label alone
        h(doc, "span", { class: "tog", "data-tog": parent ? (open ? "\u25BE" : "\u25B8") : "" }),
        String(r.label ?? ""),
      );
    }
    if (c.id === "bytes") {
      const pct = 100 * share(r);
      return h(
        doc,
        "td",
        { class: "c-bytes num", title: String(r.share_text || r.bytes_text || "") },
        h(doc, "span", { class: "bar", style: `width:${pct.toFixed(2)}%` }),
        h(doc, "span", { class: "v" }, String(r.bytes_text ?? "")),
      );
    }
    const text = c.id === "arrays" ? String(r.arrays ?? "") : String(r[c.id] ?? "");
    return h(doc, "td", { class: `c-${c.id}${c.num ? " num" : ""}`, title: text }, text);
  }

  function rowEl(i) {
    const r = prep.rows[i];
    const depth = Number(r.depth) || 0;
    const tr = h(doc, "tr", { class: `nnx-mem-row d${depth}`, "data-row": i, "data-label": String(r.label ?? "") });
    if (prep.kids[i].length) {
      tr.classList.add("nnx-mem-parent");
      tr.setAttribute("aria-expanded", query.trim() !== "" || !collapsed.has(i) ? "true" : "false");
    }
    if (matched.has(i)) tr.classList.add("match");
    for (const c of cols) tr.appendChild(cell(c, r, i));
    return tr;
  }

  const windowing = watchWindow(scroller, {
    viewportHeight: () => Math.max(0, (scroller.clientHeight || 420) - (thead.offsetHeight || 24)),
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
    () => widths.destroy(),
    () => copies.forEach((c) => c.destroy()),
  );

  function relayout() {
    const out = visibleRows(prep, { query, collapsed, sort });
    items = out.items;
    matched = new Set();
    if (out.matches >= 0) {
      const words = query.trim().toLowerCase().split(/\s+/);
      for (const i of items) {
        const hay = `${prep.rows[i].label} ${prep.rows[i].kind || ""}`.toLowerCase();
        if (words.every((w) => hay.includes(w))) matched.add(i);
      }
    }
    setText(showing, showingText(prep, out.matches, query));
    const msg = prep.n === 0 ? payload.empty || "no live array" : items.length === 0 ? "no row matches" : "";
    empty.hidden = !msg;
    setText(empty, msg);
    rendered = new Map();
    windowing.refresh(true);
  }

  function fillFreeing() {
    copies.forEach((c) => c.destroy());
    copies = [];
    const list = Array.isArray(payload.freeing) ? payload.freeing : [];
    if (!list.length) {
      freeing.replaceChildren();
      freeing.hidden = true;
      return;
    }
    freeing.hidden = false;
    const lis = list.map((f) => {
      const code = h(doc, "code", { title: String(f.statement ?? "") }, String(f.statement ?? ""));
      const copy = copyButton(doc, code, "nnx-mem-copy");
      copies.push(copy);
      return h(
        doc,
        "li",
        { class: "nnx-mem-freeing", title: (f.holders || []).join(", ") },
        h(doc, "span", { class: "nnx-mem-stmt" }, code, copy.button),
        h(doc, "span", { class: "nnx-mem-returns" }, String(f.bytes_text ?? "")),
      );
    });
    freeing.replaceChildren(
      h(doc, "div", { class: "nnx-mem-free-title" }, String(payload.freeing_title || "")),
      h(doc, "div", { class: "nnx-mem-free-note" }, String(payload.freeing_note || "")),
      h(doc, "ul", null, ...lis),
    );
  }

  function onLedger() {
    payload = model.get("ledger") || {};
    const fresh = prepare(payload);
    if (fresh.n !== prep.n) collapsed = new Set(); // a new ledger: everything open
    prep = fresh;
    fit.set(COLUMNS);
    setText(title, payload.title || "");
    const lines = (payload.devices || []).map((d) => String(d.line ?? ""));
    if (payload.note) lines.push(String(payload.note));
    head.replaceChildren(...lines.map((line) => h(doc, "div", { class: "nnx-mem-device" }, line)));
    const extra = [
      payload.left,
      ...prep.rows.filter((r) => r.note && Number(r.depth) === 1).map((r) => `${r.label}: ${r.note}`),
    ];
    notes.replaceChildren(...extra.filter(Boolean).map((t) => h(doc, "div", null, String(t))));
    fillHeader();
    relayout();
    fillFreeing();
  }

  filter.addEventListener("input", () => {
    query = filter.value || "";
    relayout();
  });
  expandAll.addEventListener("click", () => {
    collapsed = new Set();
    relayout();
  });
  holdersOnly.addEventListener("click", () => {
    collapsed = holderRows(prep);
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
    const td = ev.target && ev.target.closest ? ev.target.closest("td.c-label") : null;
    const tr = td ? td.closest("tr") : null;
    if (!tr || !tr.classList.contains("nnx-mem-parent") || query.trim() !== "") return;
    const i = Number(tr.getAttribute("data-row"));
    if (collapsed.has(i)) collapsed.delete(i);
    else collapsed.add(i);
    relayout();
  });

  model.on("change:ledger", onLedger);
  cleanups.push(() => model.off("change:ledger", onLedger));
  onLedger();

  return () => {
    for (const c of cleanups) c();
  };
}

export default { render };
