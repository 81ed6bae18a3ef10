// @ts-check
// The comparison widget's data, no DOM: the payload (nnx_lab.core.compare._payload) made a tree of
// modules and Variable rows, the order (largest change first, structural problems on top, or a
// clicked column), the filters ("changed only", a status, path text) and the listed items.

/** Statuses that say b does not load into a as it is (shown first, tinted). */
export const PROBLEMS = new Set(["missing", "unexpected", "shape", "tied", "error"]);
/** Statuses "changed only" keeps: values that moved, and every structural problem. */
export const CHANGED = new Set(["changed", "nan", ...PROBLEMS]);

// `fold`: at a narrow output the lowest folds first (behind the "+N columns" picker); none = never.
export const COLUMNS = [
  { id: "path", label: "path", width: null },
  { id: "status", label: "status", width: 120 }, // "12 of 28 changed"
  {
    id: "rel_change",
    label: "relative change",
    width: 120,
    num: true,
    fold: 8,
    title: "\u2016a\u2212b\u2016/\u2016a\u2016 of the Variable (bar: against the largest)",
  },
  { id: "max_abs", label: "max difference", width: 90, num: true, fold: 6, title: "largest |a\u2212b| of an element" },
  { id: "cosine", label: "cosine", width: 80, num: true, fold: 5, title: "cosine similarity of a and b" },
  {
    id: "frac_changed",
    label: "fraction changed",
    width: 80,
    num: true,
    fold: 4,
    title: "fraction of the elements that changed (beyond tol)",
  },
  { id: "identical", label: "identical", width: 80, fold: 2, title: "bit for bit the same" },
  { id: "shape", label: "shape", width: 150, num: true, fold: 7, title: "shape in a (vs in b when they differ)" },
  { id: "dtype", label: "dtype", width: 90, fold: 1, title: "dtype in a (vs in b when they differ)" },
  { id: "note", label: "note", width: 180, fold: 3, title: "why a row was not compared, and what differs" },
];

export const PATH_MIN_WIDTH = 180;

/** Width the columns `cols` (all by default) need, the path at its minimum. */
export function tableWidth(cols = COLUMNS) {
  return cols.reduce((s, c) => s + (c.width ?? PATH_MIN_WIDTH), 0);
}

const finite = (x) => typeof x === "number" && Number.isFinite(x);

/**
 * The payload as a tree: {M, R, modules, rows, kids (per module, -1 -> "root"), layers, maxRel, ...}.
 * @param {Partial<import("../shared/wire").ComparisonPayload> | null | undefined} payload the synced trait (traits.py)
 */
export function prepare(payload) {
  const p = payload || {};
  const modules = Array.isArray(p.modules) ? p.modules : [];
  const rows = Array.isArray(p.rows) ? p.rows : [];
  const M = modules.length;
  const kids = new Map([[-1, []]]);
  for (let i = 0; i < M; i++) kids.set(i, []);
  const layers = new Map(); // row -> its layer rows
  const push = (parent, id) => (kids.get(kids.has(parent) ? parent : -1) || kids.get(-1)).push(id);
  for (let i = 0; i < M; i++) push(modules[i].parent, i);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    if (row.layer !== null && row.layer !== undefined && row.layer_of >= 0) {
      if (!layers.has(row.layer_of)) layers.set(row.layer_of, []);
      layers.get(row.layer_of).push(M + r);
    } else push(row.module, M + r);
  }
  // Problems under each module (a module of missing rows has no aggregate but belongs on top).
  const problems = new Int32Array(M);
  for (const row of rows) {
    if (!PROBLEMS.has(row.status)) continue;
    for (let m = row.module; m >= 0 && m < M; m = modules[m].parent) problems[m] += 1;
  }
  let maxRel = 0;
  for (const row of rows) if (finite(row.rel_change) && row.rel_change > maxRel) maxRel = row.rel_change;
  return {
    verdict: String(p.verdict ?? ""),
    aType: String(p.a_type ?? "a"),
    bType: String(p.b_type ?? "b"),
    tol: p.tol,
    loadable: p.loadable !== false,
    identical: p.identical === true,
    counts: p.counts || {},
    statuses: p.statuses || {},
    modules,
    rows,
    M,
    R: rows.length,
    kids,
    layers,
    problems,
    maxRel,
  };
}

/** The item (module index, or M + row index) as its payload entry. */
export function entry(prep, id) {
  return id < prep.M ? prep.modules[id] : prep.rows[id - prep.M];
}

/**
 * A relative change as a number to sort by: JSON has no inf, so Python sends it as the text "inf"
 * (a zero-initialised bias that changed: the largest change there is); none: null.
 * @param {{rel_change?: unknown, rel_change_text?: unknown}} e
 */
function relValue(e) {
  if (finite(e.rel_change)) return /** @type {number} */ (e.rel_change);
  return e.rel_change_text === "inf" ? Infinity : null;
}

function changeKey(prep, id) {
  // Larger first: problems, then NaN rows, then the relative change (none: last).
  const e = entry(prep, id);
  const rel = relValue(e) ?? -1;
  if (id < prep.M) return [prep.problems[id] > 0 ? 1 : 0, 0, rel];
  return [PROBLEMS.has(e.status) ? 1 : 0, e.status === "nan" ? 1 : 0, rel];
}

function columnValue(prep, id, column) {
  const e = entry(prep, id);
  if (column === "path") return String(e.key ?? e.path ?? "");
  if (column === "status") return id < prep.M ? "" : String(e.status ?? "");
  if (column === "identical") return e.identical === true ? 1 : e.identical === false ? 0 : null;
  if (column === "shape") return id < prep.M ? (e.size ?? null) : (e.size ?? null);
  if (column === "dtype") return id < prep.M ? null : String(e.dtype_a ?? e.dtype_b ?? "");
  if (column === "note") return id < prep.M ? null : String([e.mismatch, e.note].filter(Boolean).join("; "));
  if (column === "rel_change") return relValue(e);
  const v = e[column];
  return finite(v) ? v : null;
}

/** A comparator of items: by `sort` ({column, dir}) or, without one, largest change first. */
export function comparator(prep, sort) {
  if (!sort) {
    return (x, y) => {
      const a = changeKey(prep, x);
      const b = changeKey(prep, y);
      for (let k = 0; k < 3; k++) if (a[k] !== b[k]) return b[k] - a[k];
      return x - y;
    };
  }
  const sign = sort.dir === "desc" ? -1 : 1;
  return (x, y) => {
    const a = columnValue(prep, x, sort.column);
    const b = columnValue(prep, y, sort.column);
    if (a === null && b === null) return x - y;
    if (a === null) return 1; // none sorts last either way
    if (b === null) return -1;
    if (typeof a === "string" || typeof b === "string") return sign * String(a).localeCompare(String(b)) || x - y;
    return sign * (a - b) || x - y;
  };
}

/** Next sort on a header click: descending first for numbers (the largest is what one looks for), then ascending, then the default. */
export function nextSort(sort, column) {
  const first = column === "path" || column === "status" || column === "dtype" || column === "note" ? "asc" : "desc";
  const second = first === "asc" ? "desc" : "asc";
  if (!sort || sort.column !== column) return { column, dir: first };
  if (sort.dir === first) return { column, dir: second };
  return null;
}

/** Which rows pass the filters: {changedOnly, status, query}; null when nothing filters. */
export function matchRows(prep, { changedOnly = false, status = null, query = "" } = {}) {
  const q = String(query || "").toLowerCase();
  if (!changedOnly && !status && !q) return null;
  const match = new Uint8Array(prep.R);
  for (let r = 0; r < prep.R; r++) {
    const row = prep.rows[r];
    if (changedOnly && !CHANGED.has(row.status)) continue;
    if (status && row.status !== status) continue;
    if (
      q &&
      !String(row.path ?? "")
        .toLowerCase()
        .includes(q)
    )
      continue;
    match[r] = 1;
  }
  return match;
}

/** Open modules at first: all of them for a small comparison, else the top level. */
export function defaultOpen(prep, small = 300) {
  const open = new Uint8Array(prep.M);
  for (let i = 0; i < prep.M; i++) open[i] = prep.R <= small || prep.modules[i].depth === 0 ? 1 : 0;
  return open;
}

/**
 * The listed items, depth first: open modules show their children (all open while a filter is on),
 * each Variable its layers' rows; with a `match`, only matching rows and the modules above them.
 */
export function flatten(prep, open, sort, match) {
  const cmp = comparator(prep, sort);
  const out = [];
  const shows = new Map(); // module -> whether anything under it matches
  function visible(id) {
    if (id >= prep.M) {
      const r = id - prep.M;
      if (!match || match[r]) return true;
      return (prep.layers.get(r) || []).some((l) => match[l - prep.M]);
    }
    if (!match) return true;
    if (!shows.has(id)) shows.set(id, prep.kids.get(id).some(visible));
    return shows.get(id);
  }
  function walk(parent) {
    const children = prep.kids.get(parent).filter(visible).sort(cmp);
    for (const id of children) {
      out.push(id);
      if (id < prep.M) {
        if (match || open[id]) walk(id);
      } else {
        const layers = prep.layers.get(id - prep.M);
        if (layers) for (const l of layers) if (!match || match[l - prep.M] || match[id - prep.M]) out.push(l);
      }
    }
  }
  walk(-1);
  return out;
}

/** "12 of 40 Variables" (what the filters leave), or "40 Variables". */
export function showingText(prep, match) {
  let total = 0;
  let shown = 0;
  for (let r = 0; r < prep.R; r++) {
    const row = prep.rows[r];
    if (row.layer !== null && row.layer !== undefined) continue;
    total += 1;
    if (!match || match[r]) shown += 1;
  }
  const noun = total === 1 ? "Variable" : "Variables";
  return match ? `${shown} of ${total} ${noun}` : `${total} ${noun}`;
}
