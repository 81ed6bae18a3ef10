// @ts-check
// The comparison widget's pieces: the verdict line, the status chips, the header cells and the
// rows (a module's aggregate, a Variable's differences with its bar). Every user string is text.

import { h } from "../shared/dom.js";
import { fmtCount, fmtNum, fmtShape } from "../shared/format.js";
import { COLUMNS, PROBLEMS, entry } from "./data.js";

const INDENT = 14;

/** The one-line verdict: "a_type vs b_type: b loads into a: ...", marked ok / not loadable. */
export function verdictParts(doc, prep) {
  const state = !prep.loadable ? "bad" : prep.identical ? "same" : "ok";
  const mark = !prep.loadable ? "\u2717" : "\u2713";
  return [
    h(doc, "span", { class: `nnx-cmp-mark ${state}`, "aria-hidden": "true" }, mark),
    h(doc, "span", { class: "nnx-cmp-sides" }, `${prep.aType} vs ${prep.bType}: `),
    h(doc, "span", { class: "nnx-cmp-text" }, prep.verdict),
    prep.tol ? h(doc, "span", { class: "nnx-cmp-tol" }, ` (tol ${fmtNum(prep.tol)})`) : null,
  ];
}

/** One chip per status present, with its count; the chip of `active` pressed. */
export function statusChips(doc, prep, active) {
  const order = Object.keys(prep.statuses);
  const names = Object.keys(prep.counts).sort((a, b) => order.indexOf(a) - order.indexOf(b));
  return names.map((name) =>
    h(
      doc,
      "button",
      {
        type: "button",
        class: `nnx-cmp-chip st-${name}${PROBLEMS.has(name) ? " problem" : ""}`,
        "data-status": name,
        "aria-pressed": active === name ? "true" : "false",
        title: `${name}: ${prep.statuses[name] ?? ""} (click: only these)`,
      },
      `${name} ${fmtCount(prep.counts[name])}`,
    ),
  );
}

export function headerCell(doc, c, sort) {
  const on = sort && sort.column === c.id;
  return h(
    doc,
    "th",
    {
      "data-col": c.id,
      class: `sortable${c.num ? " num" : ""}`,
      scope: "col",
      title: c.title ? `${c.label}: ${c.title}` : c.label,
      "aria-sort": on ? (sort.dir === "asc" ? "ascending" : "descending") : null,
    },
    h(doc, "span", { class: "lbl" }, c.label),
    h(doc, "span", { class: "arrow" }, on ? (sort.dir === "asc" ? "\u25B2" : "\u25BC") : ""),
  );
}

function bar(doc, rel, maxRel) {
  if (typeof rel !== "number" || !Number.isFinite(rel) || !(maxRel > 0)) return null;
  const pct = rel <= 0 ? 0 : Math.max(1.5, (100 * rel) / maxRel);
  return h(
    doc,
    "span",
    { class: "nnx-cmp-bar", "aria-hidden": "true" },
    h(doc, "span", { style: `width:${pct.toFixed(1)}%` }),
  );
}

function relCell(doc, e, prep) {
  const rel = e.rel_change;
  // a value JSON cannot carry (inf: a all zeros) comes as Python's text and what it means
  const title =
    typeof rel === "number"
      ? `${fmtNum(rel)}: \u2016a\u2212b\u2016/\u2016a\u2016 = ${rel} (bar: against the largest, ${fmtNum(prep.maxRel)})`
      : e.rel_change_title || null;
  return h(
    doc,
    "td",
    { class: "c-rel_change num", title },
    bar(doc, rel, prep.maxRel),
    h(doc, "span", { class: "v" }, typeof rel === "number" ? fmtNum(rel) : e.rel_change_text || ""),
  );
}

function identicalText(v) {
  return v === true ? "yes" : v === false ? "no" : "";
}

function shapeText(e) {
  const a = e.shape_a ? fmtShape(e.shape_a) : null;
  const b = e.shape_b ? fmtShape(e.shape_b) : null;
  if (a !== null && b !== null && a !== b) return `${a} vs ${b}`;
  return a ?? b ?? "";
}

function dtypeText(e) {
  if (e.dtype_a && e.dtype_b && e.dtype_a !== e.dtype_b) return `${e.dtype_a} vs ${e.dtype_b}`;
  return e.dtype_a || e.dtype_b || "";
}

/** The cells of `cols` (ids into `cells`, a blank cell where one has none) appended to `tr`. */
function appendCells(doc, tr, cols, cells) {
  for (const c of cols) tr.appendChild(cells[c.id] || h(doc, "td", { class: `c-${c.id}` }));
  return tr;
}

/** A module's row: its key (open/closed), how many of its Variables changed, its aggregates (the cells of `cols`). */
export function moduleRow(doc, prep, id, open, cols = COLUMNS) {
  const m = entry(prep, id);
  const tr = h(doc, "tr", {
    class: "nnx-cmp-module",
    "data-id": id,
    "data-path": m.path,
    "aria-expanded": open ? "true" : "false",
  });
  const hasAgg = typeof m.count === "number";
  const problems = prep.problems[id];
  const summary = hasAgg ? `${fmtCount(m.changed)} of ${fmtCount(m.count)} changed` : "";
  const status = problems ? `${fmtCount(problems)} problem${problems === 1 ? "" : "s"}` : summary;
  const note = hasAgg ? "" : "no values compared";
  return appendCells(doc, tr, cols, {
    path: h(
      doc,
      "td",
      {
        class: "c-path",
        title: [m.path, status, note].filter(Boolean).join("\n"),
        style: `padding-left:${6 + m.depth * INDENT}px`,
      },
      h(doc, "span", { class: "tog" }, open ? "\u25BE" : "\u25B8"),
      String(m.key),
    ),
    status: h(doc, "td", { class: `c-status${problems ? " bad" : ""}`, title: status || null }, status),
    rel_change: relCell(doc, m, prep),
    max_abs: h(doc, "td", { class: "c-max_abs num" }, fmtNum(m.max_abs)),
    cosine: h(doc, "td", { class: "c-cosine num" }, fmtNum(m.cosine)),
    frac_changed: h(doc, "td", { class: "c-frac_changed num" }, fmtNum(m.frac_changed)),
    identical: h(doc, "td", { class: "c-identical" }, problems ? "" : identicalText(m.identical)), // not "yes" over a problem
    shape: h(
      doc,
      "td",
      {
        class: "c-shape num",
        title: hasAgg ? `${fmtCount(m.count)} vars: ${fmtCount(m.size)} elements compared` : null,
      },
      hasAgg ? `${fmtCount(m.count)} vars` : "",
    ),
    dtype: h(doc, "td", { class: "c-dtype" }),
    note: h(doc, "td", { class: "c-note nnx-cmp-faint", title: note || null }, note),
  });
}

/** A Variable's row (or one layer of a stacked Variable): the cells of `cols`. Its path's title
 * holds what the row says in every column that can fold (shape, dtype, note), so a narrow output
 * loses none of it. */
export function variableRow(doc, prep, id, cols = COLUMNS) {
  const e = entry(prep, id);
  const status = String(e.status ?? "");
  const layer = e.layer !== null && e.layer !== undefined;
  const cls = ["nnx-cmp-row", `st-${status}`, PROBLEMS.has(status) ? "problem" : "", layer ? "layer" : ""];
  const tr = h(doc, "tr", {
    class: cls.filter(Boolean).join(" "),
    "data-id": id,
    "data-path": e.path,
    "data-status": status,
  });
  const path = e.path_b ? `${e.path} \u2190 ${e.path_b}` : e.path;
  const types =
    e.type_a && e.type_b && e.type_a !== e.type_b
      ? `type: ${e.type_a} vs ${e.type_b}`
      : e.type_a || e.type_b
        ? `type: ${e.type_a || e.type_b}`
        : "";
  const note = [e.mismatch, e.note].filter(Boolean).join("; ");
  const shape = shapeText(e);
  const dtype = dtypeText(e);
  const details = [path, types, shape && `shape: ${shape}`, dtype && `dtype: ${dtype}`, note];
  return appendCells(doc, tr, cols, {
    path: h(
      doc,
      "td",
      { class: "c-path", title: details.filter(Boolean).join("\n"), style: `padding-left:${20 + e.depth * INDENT}px` },
      String(e.key),
      e.path_b ? h(doc, "span", { class: "from" }, `\u2190 ${e.path_b}`) : null,
    ),
    status: h(
      doc,
      "td",
      { class: "c-status", title: `${status}: ${prep.statuses[status] ?? ""}` },
      h(doc, "span", { class: `st st-${status}` }, status),
    ),
    rel_change: relCell(doc, e, prep),
    max_abs: h(doc, "td", { class: "c-max_abs num" }, fmtNum(e.max_abs)),
    cosine: h(doc, "td", { class: "c-cosine num" }, fmtNum(e.cosine)),
    frac_changed: h(doc, "td", { class: "c-frac_changed num" }, fmtNum(e.frac_changed)),
    identical: h(doc, "td", { class: "c-identical" }, identicalText(e.identical)),
    shape: h(doc, "td", { class: `c-shape num${e.status === "shape" ? " bad" : ""}`, title: shape || null }, shape),
    dtype: h(
      doc,
      "td",
      { class: `c-dtype${e.dtype_a && e.dtype_b && e.dtype_a !== e.dtype_b ? " bad" : ""}`, title: dtype || null },
      dtype,
    ),
    note: h(doc, "td", { class: "c-note", title: note || null }, note),
  });
}

export { COLUMNS };
