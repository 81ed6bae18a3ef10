// The virtualized tree-table: a <table> with a sticky header inside a scroll box; only the rows
// in (or near) the viewport exist, between two spacer rows that keep the scroll height.

import { h, patch, s, setText } from "./dom.js";
import { COLUMNS, SERIES_COLUMNS, tableMinWidth } from "./columns.js";
import { typeColor } from "./colors.js";
import { fmtBytes, fmtCount, fmtNonfinite, fmtNum, fmtShape, keyText } from "./format.js";
import { sparkPath } from "./sparkline.js";
import { ROW_HEIGHT } from "./styles.js";
import { windowRange, scrollToShow } from "./virtual.js";
import { isStacked } from "./layers.js";
import { sideScroll } from "./sidescroll.js";
import { STAT_COLUMNS } from "./constants.js";

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
/** A stacked Variable's row: open or closed, its number of layers and a button for their heatmap. */
function groupCells(doc, tr, pathTd, n, open) {
  tr.classList.add("nnx-group");
  tr.setAttribute("aria-expanded", open ? "true" : "false");
  pathTd.append(
    h(doc, "span", { class: "cls" }, `${n} layers`),
    h(doc, "button", { class: "nnx-heat", type: "button", title: `heatmap: ${n} layers \u00d7 refreshes` }, "\u25A6"),
  );
}

const SPARK_W = 44; // fits the 56 px trend column with its padding
const SPARK_H = 14;
const INDENT = 14;

function tableText(tables, name, idx) {
  const t = tables && tables[name];
  return idx !== null && idx !== undefined && idx >= 0 && t && idx < t.length ? String(t[idx]) : "";
}

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

  let state = { tree: null, items: [], sort: null, history: null, stat: "norm" };
  let version = 0; // bumps whenever row contents may have changed
  let rendered = new Map(); // item id -> {tr, version}
  let flashId = -1;
  let flashTimer = 0;

  // --- cells ---------------------------------------------------------------------------------

  function moduleRow(id) {
    const t = state.tree;
    const expanded = state.expanded ? state.expanded[id] : 0;
    const depth = t.nodeDepth[id];
    const tr = h(doc, "tr", { class: "nnx-module", "data-path": t.nodePath[id], "data-id": id });
    tr.setAttribute("aria-expanded", expanded ? "true" : "false");
    const path = h(
      doc,
      "td",
      { class: "c-path", colspan: 2, title: t.nodePath[id], style: `padding-left:${6 + depth * INDENT}px` },
      h(doc, "span", { class: "tog" }, expanded ? "\u25BE" : "\u25B8"),
      keyText(t.nodeKey[id], true),
    );
    if (t.nodeType[id]) path.appendChild(h(doc, "span", { class: "cls" }, t.nodeType[id]));
    const count = t.nodeCount[id];
    tr.append(
      path,
      h(
        doc,
        "td",
        { class: "c-shape num", title: `${fmtCount(t.nodeSize[id])} elements` },
        `${fmtCount(count)} var${count === 1 ? "" : "s"}`,
      ),
      h(doc, "td", { class: "c-dtype" }),
      h(doc, "td", { class: "c-bytes num", title: `${fmtCount(t.nodeBytes[id])} bytes` }, fmtBytes(t.nodeBytes[id])),
      h(doc, "td", { class: "c-place" }),
    );
    for (const c of [...STAT_COLUMNS, ...SERIES_COLUMNS, "since"])
      tr.appendChild(h(doc, "td", { class: `c-${c} num` }));
    const nf = t.nodeNonfinite[id];
    tr.append(
      h(doc, "td", { class: `c-nonfinite num${nf ? " bad" : ""}` }, nf ? `${fmtCount(nf)} NaN/Inf` : ""),
      h(doc, "td", { class: "c-spark" }),
      h(doc, "td", { class: "c-status" }),
    );
    return tr;
  }

  function sparkCell(r) {
    const td = h(doc, "td", { class: "c-spark" });
    const hist = state.history;
    if (!hist) return td;
    const values = hist.series(r);
    const d = sparkPath(values, SPARK_W, SPARK_H, 1.5);
    if (!d) return td;
    let last = NaN;
    for (let k = values.length - 1; k >= 0; k--) {
      if (Number.isFinite(values[k])) {
        last = values[k];
        break;
      }
    }
    td.setAttribute(
      "title",
      `${state.stat}: ${fmtNum(last)} (${values.length} refresh${values.length === 1 ? "" : "es"})`,
    );
    td.appendChild(
      s(
        doc,
        "svg",
        { width: SPARK_W, height: SPARK_H, viewBox: `0 0 ${SPARK_W} ${SPARK_H}`, "aria-hidden": "true" },
        s(doc, "path", { d }),
      ),
    );
    return td;
  }

  function variableRow(id) {
    const t = state.tree;
    const r = id - t.N;
    const snap = t.snap;
    const rows = snap.rows || {};
    const stats = snap.stats || {};
    const tables = snap.tables || {};
    const at = (c) => (rows[c] ? rows[c][r] : null);
    const st = (c) => (stats[c] ? stats[c][r] : null);
    const path = t.rowPath[r];
    const tr = h(doc, "tr", { class: "nnx-row", "data-path": path, "data-id": id });
    if (id === flashId) tr.classList.add("nnx-flash");

    const aliases = at("aliases");
    const meta = tableText(tables, "metadata", at("metadata"));
    let title = path || "(root)";
    if (aliases && aliases.length) title += `\nalso: ${aliases.join(", ")}`;
    if (meta) title += `\nmetadata: ${meta}`;
    const depth = t.rowDepth[r];
    const layer = t.rowLayer ? t.rowLayer[r] : -1;
    let key = t.rowParent[r] < 0 && t.rowKey[r] === "" ? "(root)" : keyText(t.rowKey[r], true);
    if (layer >= 0) key = `layer ${layer}`;
    const stacked = isStacked(t, r);
    const open = stacked && !!(state.openRows && state.openRows[r]);
    const pathTd = h(
      doc,
      "td",
      { class: "c-path", title, style: `padding-left:${6 + depth * INDENT + (stacked ? 0 : 14)}px` },
      stacked ? h(doc, "span", { class: "tog" }, open ? "\u25BE" : "\u25B8") : null,
      key,
    );
    if (stacked) groupCells(doc, tr, pathTd, t.layerKids.get(r).length, open);
    if (aliases && aliases.length)
      pathTd.appendChild(
        h(doc, "span", { class: "alias" }, `+${aliases.length} alias${aliases.length === 1 ? "" : "es"}`),
      );

    const type = t.rowType[r];
    const typeTd = h(
      doc,
      "td",
      { class: "c-type", title: type },
      h(
        doc,
        "span",
        { class: "chip" },
        h(doc, "span", { class: "nnx-dot", style: `background:${typeColor(type)}` }),
        h(doc, "span", { class: "t" }, type),
      ),
    );

    const dtype = tableText(tables, "dtype", at("dtype"));
    const sharding = tableText(tables, "sharding", at("sharding"));
    const devices = tableText(tables, "devices", at("devices"));
    const logical = tableText(tables, "logical", at("logical"));
    const mismatch = at("mismatch");
    const place = sharding || devices;
    const placeTitle = [
      sharding && `sharding: ${sharding}`,
      devices && `devices: ${devices}`,
      logical && `logical: ${logical}`,
      mismatch && `\u2260 ${mismatch}`,
    ]
      .filter(Boolean)
      .join("\n");
    const nbytes = at("nbytes");

    tr.append(
      pathTd,
      typeTd,
      h(doc, "td", { class: "c-shape num" }, fmtShape(at("shape"))),
      h(doc, "td", { class: "c-dtype" }, dtype),
      h(
        doc,
        "td",
        { class: "c-bytes num", title: nbytes === null || nbytes === undefined ? null : `${fmtCount(nbytes)} bytes` },
        fmtBytes(nbytes),
      ),
      h(
        doc,
        "td",
        { class: `c-place${mismatch ? " bad" : ""}`, title: placeTitle || null },
        mismatch ? h(doc, "span", { class: "mismatch" }, "\u2260 ") : null,
        place,
      ),
    );
    for (const c of STAT_COLUMNS) {
      const v = st(c);
      tr.appendChild(h(doc, "td", { class: `c-${c} num` }, fmtNum(v)));
    }
    const series = snap.seriesData;
    for (const c of SERIES_COLUMNS) {
      const name = c === "u_ratio" ? "update" : "grad";
      const stale = series && series.stale.has(name) ? `${name} from step ${series.steps[name]} (none since)` : null;
      tr.appendChild(h(doc, "td", { class: `c-${c} num${stale ? " stale" : ""}`, title: stale }, fmtNum(st(c))));
    }
    tr.appendChild(h(doc, "td", { class: "c-since num" }, fmtNum(st("since"))));
    const nf = fmtNonfinite(st("nan_count"), st("inf_count"));
    tr.appendChild(h(doc, "td", { class: `c-nonfinite num${nf ? " bad" : ""}` }, nf));
    tr.appendChild(sparkCell(r));
    const status = tableText(tables, "status", at("status"));
    const note = at("note");
    const statusTd = h(doc, "td", { class: "c-status" });
    if (status && status !== "ok") {
      statusTd.appendChild(h(doc, "span", { class: `st ${status}` }, status));
      if (note) statusTd.append(" \u2014 ", String(note));
      statusTd.setAttribute("title", note ? `${status}: ${note}` : status);
    } else if (note) {
      statusTd.append(String(note));
      statusTd.setAttribute("title", String(note));
    }
    tr.appendChild(statusTd);
    return tr;
  }

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
        const fresh = id < state.tree.N ? moduleRow(id) : variableRow(id);
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

  tbody.addEventListener("click", (ev) => {
    const heat = ev.target.closest ? ev.target.closest("button.nnx-heat") : null;
    const tr = ev.target.closest ? ev.target.closest("tr.nnx-module") || ev.target.closest("tr.nnx-group") : null;
    if (!tr || !state.tree) return;
    const id = Number(tr.getAttribute("data-id"));
    if (!Number.isInteger(id)) return;
    if (heat && onHeatmap) onHeatmap(id - state.tree.N);
    else if (id < state.tree.N || isStacked(state.tree, id - state.tree.N)) onToggle(id);
  });
  thead.addEventListener("click", (ev) => {
    const th = ev.target.closest ? ev.target.closest("th[data-col]") : null;
    if (!th || !th.classList.contains("sortable")) return;
    onSort(th.getAttribute("data-col"));
  });

  function setHeader() {
    for (const c of COLUMNS) {
      const { th, label, arrow } = headCells.get(c.id);
      const on = state.sort && state.sort.column === c.id;
      setText(arrow, on ? (state.sort.dir === "asc" ? "\u25B2" : "\u25BC") : "");
      if (on) th.setAttribute("aria-sort", state.sort.dir === "asc" ? "ascending" : "descending");
      else th.removeAttribute("aria-sort");
      if (c.id === "spark") {
        setText(label, "\u223F");
        th.setAttribute("title", `trend of ${state.stat} over the last refreshes`);
      }
    }
  }

  return {
    el: side.el,
    /** New state; `rows` true when row contents changed (else only the window moves). */
    update(next, { rows = true, sync = false } = {}) {
      state = { ...state, ...next };
      const hidden = state.hidden || new Set();
      for (const c of COLUMNS) table.classList.toggle(`hide-${c.id}`, hidden.has(c.id));
      table.style.minWidth = `${tableMinWidth(hidden)}px`;
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
      windowing.destroy();
    },
  };
}
