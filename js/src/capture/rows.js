// @ts-check
// The capture table's rows: a module row (toggle, key, class, how many values) and a value row
// (type, shape, dtype, statistics, histogram, and the gradient's beside them). Every user string
// is text.

import { h, s } from "../shared/dom.js";
import { typeCell } from "../shared/colors.js";
import { STAT_COLUMNS } from "../shared/constants.js";
import { fmtCount, fmtNonfinite, fmtNum, fmtShape, keyText } from "../shared/format.js";
import { HIST_H, HIST_W } from "./styles.js";
import { histPath, histTitle, rowLabel } from "./data.js";

export const INDENT = 14;

function tableText(tables, name, idx) {
  const t = tables && tables[name];
  return idx !== null && idx !== undefined && idx >= 0 && t && idx < t.length ? String(t[idx]) : "";
}

function histCell(doc, cls, hist, label) {
  const td = h(doc, "td", { class: cls });
  if (!hist) return td;
  const d = histPath(hist.counts, HIST_W, HIST_H);
  const title = histTitle(hist, label);
  td.setAttribute("title", title);
  td.appendChild(
    s(
      doc,
      "svg",
      {
        class: "nnx-capture-hist",
        width: HIST_W,
        height: HIST_H,
        viewBox: `0 0 ${HIST_W} ${HIST_H}`,
        role: "img",
        "aria-label": title.split("\n")[0],
      },
      s(doc, "line", { x1: 0, y1: HIST_H + 0.5, x2: HIST_W, y2: HIST_H + 0.5 }),
      d ? s(doc, "path", { d }) : null,
    ),
  );
  return td;
}

/** Cells of one value: `t` the tree (forward or gradient) it is a row of, `r` its row. */
function statCells(doc, t, r, grad) {
  const snap = t.snap || {};
  const stats = snap.stats || {};
  const rows = snap.rows || {};
  const st = (c) => (stats[c] ? stats[c][r] : null);
  const state = tableText(snap.tables, "status", rows.status ? rows.status[r] : null);
  const nf = fmtNonfinite(st("nan_count"), st("inf_count"));
  const cell = (id, v) => h(doc, "td", { class: `c-${id} num${grad ? " grad" : ""}` }, fmtNum(v));
  const out = {};
  for (const c of STAT_COLUMNS) out[c] = cell(grad ? `g${c}` : c, st(c));
  if (state && state !== "ok") {
    const note = rows.note ? rows.note[r] : null;
    out.mean = h(
      doc,
      "td",
      { class: `c-${grad ? "g" : ""}mean${grad ? " grad" : ""}`, title: note ? `${state}: ${note}` : state },
      h(doc, "span", { class: "st" }, state),
    );
  }
  out.nonfinite = h(
    doc,
    "td",
    { class: `c-${grad ? "g" : ""}nonfinite num${grad ? " grad" : ""}${nf ? " bad" : ""}` },
    nf,
  );
  return out;
}

function gradCells(doc, g, k) {
  if (k < 0) {
    const blank = (id) => h(doc, "td", { class: `c-${id} grad`, title: "no gradient: this value was not perturbed" });
    return {
      gmean: blank("gmean"),
      gstd: blank("gstd"),
      gnorm: blank("gnorm"),
      gnonfinite: blank("gnonfinite"),
      ghist: blank("ghist"),
    };
  }
  const c = statCells(doc, g.tree, k, true);
  return {
    gmean: c.mean,
    gstd: c.std,
    gnorm: c.norm,
    gnonfinite: c.nonfinite,
    ghist: histCell(doc, "c-ghist grad", g.hist[k], "gradient values"),
  };
}

function describeCells(doc, t, r) {
  const snap = t.snap || {};
  const rows = snap.rows || {};
  const dtype = tableText(snap.tables, "dtype", rows.dtype ? rows.dtype[r] : null);
  const type = t.rowType[r];
  const shape = fmtShape(rows.shape ? rows.shape[r] : null);
  return {
    type: typeCell(doc, type),
    shape: h(doc, "td", { class: "c-shape num", title: [shape, dtype].filter(Boolean).join(" ") || null }, shape),
    dtype: h(doc, "td", { class: "c-dtype" }, dtype),
  };
}

/** Row `r` of the report `prep`: one cell per column of `cols`; `inline` marks groups drawn inline. */
export function valueRow(doc, prep, cols, inline, r) {
  const t = prep.tree;
  const path = t.rowPath[r];
  const rows = t.snap.rows || {};
  const gradOnly = !!prep.gradOnly[r];
  const meta = tableText(t.snap.tables, "metadata", rows.metadata ? rows.metadata[r] : null);
  const { label, depth } = rowLabel(t, r, inline);
  let title = meta ? `${path}\nmetadata: ${meta}` : path;
  if (gradOnly) title += "\na perturbation: its gradient (the forward value is not captured)";
  const cells = {
    path: h(doc, "td", { class: "c-path", title, style: `padding-left:${6 + depth * INDENT + 14}px` }, label),
    ...describeCells(doc, t, r),
    ...(gradOnly ? {} : statCells(doc, t, r, false)),
    hist: histCell(doc, "c-hist", prep.hist[r], "values"),
    ...(prep.grad ? gradCells(doc, prep.grad, prep.grad.row[r]) : {}),
  };
  const tr = h(doc, "tr", { class: `nnx-capture-row${gradOnly ? " grad-only" : ""}`, "data-path": path });
  for (const c of cols) tr.appendChild(cells[c.id] || h(doc, "td", { class: `c-${c.id}${c.grad ? " grad" : ""}` }));
  return tr;
}

/** Module node `i` of the report `prep`, open or closed. */
export function moduleRow(doc, prep, cols, open, i) {
  const t = prep.tree;
  const tr = h(doc, "tr", {
    class: "nnx-capture-module",
    "data-path": t.nodePath[i],
    "data-id": i,
    "aria-expanded": open ? "true" : "false",
  });
  const path = h(
    doc,
    "td",
    { class: "c-path", title: t.nodePath[i], style: `padding-left:${6 + t.nodeDepth[i] * INDENT}px` },
    h(doc, "span", { class: "tog" }, open ? "\u25BE" : "\u25B8"),
    keyText(t.nodeKey[i], true),
  );
  if (t.nodeType[i]) path.appendChild(h(doc, "span", { class: "cls" }, t.nodeType[i]));
  const n = t.nodeCount[i];
  tr.appendChild(path);
  for (const c of cols.slice(1)) {
    if (c.id === "shape")
      tr.appendChild(h(doc, "td", { class: "c-shape num" }, `${fmtCount(n)} value${n === 1 ? "" : "s"}`));
    else tr.appendChild(h(doc, "td", { class: `c-${c.id}${c.grad ? " grad" : ""}` }));
  }
  return tr;
}
