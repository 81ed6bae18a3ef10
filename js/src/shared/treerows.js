// @ts-check
// The cells of the viewer's tree table (table.js): a module's row and a Variable's row, built
// from the table's state ({tree, history, stat, expanded, openRows}). DOM only, no listeners.

import { h, s } from "./dom.js";
import { typeCell } from "./colors.js";
import { SERIES_COLUMNS } from "./columns.js";
import { STAT_COLUMNS } from "./constants.js";
import { fmtBytes, fmtCount, fmtNonfinite, fmtNum, fmtShape, keyText } from "./format.js";
import { isStacked } from "./layers.js";
import { sparkPath } from "./sparkline.js";
import { tableText } from "./tables.js";

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

/** The row of module `id`: its path with an open/closed toggle and the aggregates of its Variables. */
export function moduleRow(doc, state, id) {
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
  for (const c of [...STAT_COLUMNS, ...SERIES_COLUMNS, "since"]) tr.appendChild(h(doc, "td", { class: `c-${c} num` }));
  const nf = t.nodeNonfinite[id];
  tr.append(
    h(doc, "td", { class: `c-nonfinite num${nf ? " bad" : ""}` }, nf ? `${fmtCount(nf)} NaN/Inf` : ""),
    h(doc, "td", { class: "c-spark" }),
    h(doc, "td", { class: "c-status" }),
  );
  return tr;
}

/** The trend cell of Variable row `r`: a sparkline of its history of `state.stat`. */
function sparkCell(doc, state, r) {
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

/** The row of Variable item `id` (row id - N); `flash` marks it as just revealed. */
export function variableRow(doc, state, id, flash) {
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
  if (flash) tr.classList.add("nnx-flash");

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
  const typeTd = typeCell(doc, type);

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
    const since = series && series.since ? series.since[name] : null;
    const stale =
      series && series.stale.has(name) ? `${name} from step ${series.steps[name]} (${since || "none since"})` : null;
    const shown = fmtNum(st(c));
    // the title replaces the full text a cut cell gets on hover: it says the number too
    const title = stale ? (shown ? `${shown} \u00b7 ${stale}` : stale) : null;
    tr.appendChild(h(doc, "td", { class: `c-${c} num${stale ? " stale" : ""}`, title }, shown));
  }
  const since = st("since"); // a number, or "shape": the baseline's array at this path has another shape
  tr.appendChild(
    typeof since === "string"
      ? h(doc, "td", { class: "c-since num bad", title: `${since}: the baseline's shape differs; not compared` }, since)
      : h(doc, "td", { class: "c-since num" }, fmtNum(since)),
  );
  const nf = fmtNonfinite(st("nan_count"), st("inf_count"));
  tr.appendChild(h(doc, "td", { class: `c-nonfinite num${nf ? " bad" : ""}` }, nf));
  tr.appendChild(sparkCell(doc, state, r));
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
