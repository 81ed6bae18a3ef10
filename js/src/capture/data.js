// @ts-check
// The capture panel's data (pure, no DOM): the report payload as a tree of captured values with
// their histograms and (after panel.grads) the gradient at each perturbed value, next to the
// value sown under that name or in its own row under its module; the
// module checkbox tree; the table's columns; histogram geometry.
//
// Payload (CapturePanel.report = CaptureReport.to_dict()):
//   {snapshot: <Snapshot.to_dict()>, hist: {bins: B, rows: [[lo, hi, c0..cB-1] | null, ...]},
//    grads: {snapshot, hist} | null, messages: [str], types: [names], seen: [names]}

import { buildTree, flatten } from "../shared/tree.js";
import { fmtCount, fmtNum, fmtShape, keyText } from "../shared/format.js";

const EMPTY_TREE = buildTree({});

/** A histogram row [lo, hi, c0..] as {lo, hi, counts, total}, or null when it is not one. */
export function histRow(row) {
  if (!Array.isArray(row) || row.length < 3) return null;
  const counts = row.slice(2).map((c) => (typeof c === "number" && c > 0 ? c : 0));
  let total = 0;
  for (const c of counts) total += c;
  const lo = typeof row[0] === "number" ? row[0] : null;
  const hi = typeof row[1] === "number" ? row[1] : null;
  return { lo, hi, counts, total };
}

function histRows(hist, n) {
  const rows = hist && Array.isArray(hist.rows) ? hist.rows : [];
  const out = new Array(n);
  for (let r = 0; r < n; r++) out[r] = histRow(rows[r]);
  return out;
}

/**
 * The gradient of which forward row: the row at the same path, else the one value sown under
 * that name (`h[0]` when `h` was sown once and perturbed under the same name). Returns a Map
 * gradient row -> forward row.
 */
export function matchGradients(tree, gtree) {
  const byPath = new Map();
  for (let r = 0; r < tree.R; r++) byPath.set(tree.rowPath[r], r);
  const out = new Map();
  const taken = new Set();
  for (let k = 0; k < gtree.R; k++) {
    const p = gtree.rowPath[k];
    let r = byPath.get(p);
    if (r === undefined && !byPath.has(`${p}[1]`)) r = byPath.get(`${p}[0]`);
    if (r !== undefined && !taken.has(r)) {
      out.set(k, r);
      taken.add(r);
    }
  }
  return out;
}

const TABLES = ["type", "dtype", "sharding", "devices", "metadata", "status"];
const ROW_COLS = ["shape", "nbytes", "aliases", "note"];
const LAYER_COLS = ["layer_of", "layer"];

/**
 * The forward snapshot payload with the gradient rows `extra` (no forward value) added under
 * their modules: their module nodes are found or added by path, their strings re-interned, their
 * forward statistics left empty. Pure; the inputs are not modified.
 */
export function mergeRows(snap, tree, gsnap, gtree, extra) {
  const nodes = snap.nodes || {};
  const rows = snap.rows || {};
  const gnodes = gsnap.nodes || {};
  const grows = gsnap.rows || {};
  const copy = (a, n, fill = null) => (Array.isArray(a) && a.length === n ? a.slice() : new Array(n).fill(fill));
  const N = tree.N;
  const R = tree.R;
  const parent = copy(nodes.parent, N, -1);
  const key = copy(nodes.key, N, "");
  const type = copy(nodes.type, N, "");
  const nodeAt = new Map();
  for (let i = 0; i < N; i++) nodeAt.set(tree.nodePath[i], i);
  const mapNode = (g) => {
    if (g < 0) return -1;
    const path = gtree.nodePath[g];
    if (nodeAt.has(path)) return nodeAt.get(path);
    const p = mapNode(gtree.nodeParent[g]);
    const i = parent.length;
    parent.push(p);
    key.push(gtree.nodeKey[g]);
    type.push(gtree.nodeType[g]);
    nodeAt.set(path, i);
    return i;
  };
  const tables = {};
  const intern = {};
  for (const t of TABLES) {
    tables[t] = Array.isArray(snap.tables && snap.tables[t]) ? snap.tables[t].slice() : [];
    intern[t] = new Map(tables[t].map((v, i) => [v, i]));
  }
  const reIntern = (t, idx) => {
    const v =
      gsnap.tables && gsnap.tables[t] && idx !== null && idx !== undefined && idx >= 0
        ? gsnap.tables[t][idx]
        : undefined;
    if (v === undefined) return -1;
    if (!intern[t].has(v)) {
      intern[t].set(v, tables[t].length);
      tables[t].push(v);
    }
    return intern[t].get(v);
  };
  const out = { parent: copy(rows.parent, R, -1), key: copy(rows.key, R, "") };
  for (const t of TABLES) out[t] = copy(rows[t], R, -1);
  for (const c of ROW_COLS) out[c] = copy(rows[c], R, null);
  for (const c of LAYER_COLS) if (rows[c]) out[c] = copy(rows[c], R, null); // layer links: forward rows only
  const stats = {};
  for (const c of Object.keys(snap.stats || {})) stats[c] = copy(snap.stats[c], R, null);
  for (const k of extra) {
    out.parent.push(mapNode(gtree.rowParent[k]));
    out.key.push(gtree.rowKey[k]);
    for (const t of TABLES) out[t].push(reIntern(t, grows[t] ? grows[t][k] : -1));
    for (const c of ROW_COLS) out[c].push(grows[c] ? (grows[c][k] ?? null) : null);
    for (const c of LAYER_COLS) if (out[c]) out[c].push(null);
    for (const c of Object.keys(stats)) stats[c].push(null);
  }
  return { ...snap, nodes: { parent, key, type }, rows: out, stats, tables };
}

/**
 * The report payload, ready to draw: `tree` (tree.js over the forward snapshot, plus the
 * gradient rows that have no forward value, under their modules), `hist[r]`, `gradOnly[r]`,
 * `grad` (null, or {tree, hist, row: Int32Array row -> gradient row or -1}), `messages`,
 * `types`, `seen`, `called`.
 * @param {Partial<import("../shared/wire").CaptureReport> | null | undefined} report the synced trait (traits.py)
 */
export function prepareReport(report) {
  const rep = report && typeof report === "object" ? report : {};
  const snap = rep.snapshot && typeof rep.snapshot === "object" ? rep.snapshot : null;
  let tree = snap ? buildTree(snap) : EMPTY_TREE;
  const forwardRows = tree.R;
  const out = {
    called: !!snap,
    tree,
    hist: histRows(rep.hist, tree.R),
    gradOnly: new Uint8Array(tree.R),
    grad: null,
    messages: Array.isArray(rep.messages) ? rep.messages.map(String) : [],
    types: Array.isArray(rep.types) ? rep.types.map(String) : [],
    seen: Array.isArray(rep.seen) ? rep.seen.map(String) : [],
  };
  const g = rep.grads;
  if (snap && g && typeof g === "object" && g.snapshot && typeof g.snapshot === "object") {
    const gtree = buildTree(g.snapshot);
    const match = matchGradients(tree, gtree);
    const extra = [];
    for (let k = 0; k < gtree.R; k++) if (!match.has(k)) extra.push(k);
    if (extra.length) {
      tree = buildTree(mergeRows(snap, tree, g.snapshot, gtree, extra));
      out.tree = tree;
      out.hist = out.hist.concat(new Array(extra.length).fill(null));
    }
    const row = new Int32Array(tree.R).fill(-1);
    for (const [k, r] of match) row[r] = k;
    out.gradOnly = new Uint8Array(tree.R);
    extra.forEach((k, i) => {
      row[forwardRows + i] = k;
      out.gradOnly[forwardRows + i] = 1;
    });
    out.grad = { tree: gtree, hist: histRows(g.hist, gtree.R), row };
  }
  return out;
}

// --- sown tuples ----------------------------------------------------------------------------

/**
 * Nodes drawn inline: the group a sown tuple makes (no class, only values under it: `act` holding
 * `act[0]`, `act[1]`) is not a row of its own; its values show as `act[0]`... at its level.
 * Returns a Uint8Array over the tree's nodes.
 */
export function inlineGroups(tree) {
  const inline = new Uint8Array(tree.N);
  for (let i = 0; i < tree.N; i++) {
    const kids = tree.kids[i + 1];
    if (tree.nodeType[i] || !kids.length) continue;
    inline[i] = kids.every((id) => id >= tree.N) ? 1 : 0;
  }
  return inline;
}

/** Visible items with inline groups left out (their values stay, always shown). */
export function visibleItems(tree, expanded, inline) {
  const open = expanded.slice();
  for (let i = 0; i < tree.N; i++) if (inline[i]) open[i] = 1;
  // A stacked value's layers (sown inside nnx.scan over layers) are always listed under it.
  return flatten(tree, open, tree.kids, null, new Uint8Array(tree.R).fill(1)).filter(
    (id) => id >= tree.N || !inline[id],
  );
}

/** A value row's label and depth, with its inline group's key in front: "act[0]" at act's depth. */
export function rowLabel(tree, r, inline) {
  const p = tree.rowParent[r];
  if (tree.rowLayer && tree.rowLayer[r] >= 0) {
    return { label: `layer ${tree.rowLayer[r]}`, depth: rowLabel(tree, tree.rowLayerOf[r], inline).depth + 1 };
  }
  if (p >= 0 && inline[p])
    return { label: keyText(tree.nodeKey[p], true) + keyText(tree.rowKey[r], false), depth: tree.rowDepth[r] - 1 };
  if (p < 0 && tree.rowKey[r] === "") return { label: "(root)", depth: 0 };
  return { label: keyText(tree.rowKey[r], true), depth: tree.rowDepth[r] };
}

// --- columns ------------------------------------------------------------------------------

// id (cell class c-<id>, header data-col), label, width (px; null = the rest), numeric, grad, and
// `fold`: at a narrow output the lowest folds first (behind the "+N columns" picker); none = never
// (NaN/Inf, shown only when there are some).
export const CAPTURE_COLUMNS = [
  { id: "path", label: "path", width: null },
  { id: "type", label: "type", width: 112, fold: 4, title: "the Variable type it was collected as" },
  { id: "shape", label: "shape", width: 100, num: true, fold: 12 }, // "(2, 32, 256)" in full
  { id: "dtype", label: "dtype", width: 66, fold: 1 },
  { id: "mean", label: "mean", width: 74, num: true, fold: 11 },
  { id: "std", label: "std", width: 74, num: true, fold: 6, title: "standard deviation" },
  { id: "min", label: "min", width: 74, num: true, fold: 2 },
  { id: "max", label: "max", width: 74, num: true, fold: 3 },
  { id: "nonfinite", label: "NaN/Inf", width: 78, num: true, title: "how many elements are NaN / Inf" },
  {
    id: "hist",
    label: "histogram",
    width: 88,
    fold: 8,
    title: "distribution of the values (finite ones), computed on the device",
  },
  {
    id: "gmean",
    label: "grad mean",
    width: 74,
    num: true,
    grad: true,
    fold: 10,
    title: "mean of the gradient of the loss with respect to this value",
  },
  { id: "gstd", label: "grad std", width: 74, num: true, grad: true, fold: 5, title: "std of the gradient" },
  { id: "gnorm", label: "grad norm", width: 74, num: true, grad: true, fold: 9, title: "L2 norm of the gradient" },
  {
    id: "gnonfinite",
    label: "grad NaN/Inf",
    width: 80,
    num: true,
    grad: true,
    title: "how many elements of the gradient are NaN / Inf",
  },
  {
    id: "ghist",
    label: "grad histogram",
    width: 100,
    grad: true,
    fold: 7,
    title: "distribution of the gradient",
  },
];

export const PATH_MIN_WIDTH = 170; // "hidden_activation[0]" two levels down, with room to spare

function anyNonfinite(snap) {
  const st = (snap && snap.stats) || {};
  const any = (c) => (c || []).some((v) => v);
  return any(st.nan_count) || any(st.inf_count);
}

/**
 * The columns worth showing: gradient columns only with gradients, NaN/Inf only when there are
 * some. Which of them fit the output is the table's fit (shared/tablefit.js: min, max and dtype
 * fold first; the shape's tooltip names the dtype).
 */
export function visibleColumns(prep) {
  const grads = !!(prep && prep.grad);
  const snap = prep && prep.tree ? prep.tree.snap : null;
  const gsnap = grads ? prep.grad.tree.snap : null;
  return captureColumns(prep).filter((c) => {
    if (c.grad && !grads) return false;
    if (c.id === "nonfinite" && !anyNonfinite(snap)) return false;
    if (c.id === "gnonfinite" && !anyNonfinite(gsnap)) return false;
    return true;
  });
}

const SHAPE_MAX_WIDTH = 180;

/**
 * CAPTURE_COLUMNS with the shape column as wide as the longest shape captured needs (7 px a
 * character of its 11.5px monospace, and the padding): an attention's (16, 20, 4, 16) whole, not
 * "(16, 20, 4,…"; at least its own 100 px, at most SHAPE_MAX_WIDTH (a longer one is cut, in full on hover).
 */
export function captureColumns(prep) {
  let longest = 0;
  for (const t of [prep && prep.tree, prep && prep.grad && prep.grad.tree]) {
    const shapes = (t && t.snap && t.snap.rows && t.snap.rows.shape) || [];
    for (const shape of shapes) longest = Math.max(longest, fmtShape(shape).length);
  }
  const width = Math.min(SHAPE_MAX_WIDTH, Math.ceil(longest * 7 + 16));
  return CAPTURE_COLUMNS.map((c) => (c.id === "shape" && width > c.width ? { ...c, width } : c));
}

export function columnsWidth(cols) {
  return cols.reduce((s, c) => s + (c.width ?? PATH_MIN_WIDTH), 0);
}

// --- histogram ----------------------------------------------------------------------------

function r1(x) {
  return Math.round(x * 10) / 10;
}

/**
 * SVG path data for bars of `counts` in a w×h box: one bar per bin, height proportional to the
 * count, at least 1 px for a non-empty bin (so a lone outlier shows); "" when all are empty.
 */
export function histPath(counts, w, h, gap = 1) {
  const n = counts ? counts.length : 0;
  let max = 0;
  for (let i = 0; i < n; i++) if (counts[i] > max) max = counts[i];
  if (n === 0 || max <= 0) return "";
  const bw = w / n;
  const inner = Math.max(0.5, bw - (bw > 2 * gap ? gap : 0));
  let d = "";
  for (let i = 0; i < n; i++) {
    const c = counts[i];
    if (!(c > 0)) continue;
    const bh = Math.max(1, (c / max) * h);
    d += `M${r1(i * bw)} ${h}V${r1(h - bh)}h${r1(inner)}V${h}z`;
  }
  return d;
}

/** Tooltip of a histogram: range, count, and the fullest bin. */
export function histTitle(hist, label = "values") {
  if (!hist) return "";
  const n = hist.counts.length;
  let best = 0;
  for (let i = 1; i < n; i++) if (hist.counts[i] > hist.counts[best]) best = i;
  const lines = [`${fmtCount(hist.total)} finite ${label} in ${fmtCount(n)} bins`];
  if (hist.lo !== null && hist.hi !== null) {
    lines.push(`range ${fmtNum(hist.lo)} \u2026 ${fmtNum(hist.hi)}`);
    if (n > 0 && hist.hi > hist.lo) {
      const step = (hist.hi - hist.lo) / n;
      lines.push(
        `fullest bin ${fmtNum(hist.lo + best * step)} \u2026 ${fmtNum(hist.lo + (best + 1) * step)}: ${fmtCount(hist.counts[best])}`,
      );
    }
  }
  return lines.join("\n");
}

// --- module tree --------------------------------------------------------------------------

/**
 * The module checkbox list from `controls.modules` ([{path, parent, key, cls, on}], parents
 * before children): depth per module and a tri-state per checkbox, over the module and every
 * module below it: `checked[i]` all on, `mixed[i]` some on (indeterminate), neither: none.
 * `selected` counts the modules that are on themselves.
 */
export function moduleTree(modules) {
  const list = Array.isArray(modules) ? modules : [];
  const n = list.length;
  const parent = new Int32Array(n);
  const depth = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let p = Number(list[i] && list[i].parent);
    if (!Number.isInteger(p) || p < -1 || p >= i) p = -1; // parents come first; anything else is a root
    parent[i] = p;
    depth[i] = p < 0 ? 0 : depth[p] + 1;
  }
  const on = new Int32Array(n);
  const all = new Int32Array(n);
  for (let i = n - 1; i >= 0; i--) {
    on[i] += list[i] && list[i].on ? 1 : 0;
    all[i] += 1;
    if (parent[i] >= 0) {
      on[parent[i]] += on[i];
      all[parent[i]] += all[i];
    }
  }
  const checked = new Uint8Array(n);
  const mixed = new Uint8Array(n);
  let selected = 0;
  for (let i = 0; i < n; i++) {
    selected += list[i] && list[i].on ? 1 : 0;
    checked[i] = on[i] === all[i] ? 1 : 0;
    mixed[i] = on[i] > 0 && on[i] < all[i] ? 1 : 0;
  }
  return { n, parent, depth, checked, mixed, selected };
}

/** "5 of 7 modules", "all 7 modules", "no module". */
export function modulesSummary(tree) {
  if (!tree || tree.n === 0) return "no module";
  if (tree.selected === tree.n) return `all ${fmtCount(tree.n)} module${tree.n === 1 ? "" : "s"}`;
  if (tree.selected === 0) return `none of ${fmtCount(tree.n)} modules`;
  return `${fmtCount(tree.selected)} of ${fmtCount(tree.n)} modules`;
}
