// @ts-check
// The summary widget's rows as a tree (pure, no DOM): parents from the rows' depths (call order),
// which rows are listed for a filter, the collapsed rows and a sort, and each row's share of FLOPs.

/**
 * Columns: id (cell class c-<id>), label, width (px; null = the rest), numeric, sort value key, and
 * `fold`: at a narrow output the lowest folds first (behind the "+N columns" picker); none = never.
 */
export const COLUMNS = [
  { id: "path", label: "module call", width: null },
  { id: "cls", label: "class", width: 100, fold: 5 },
  { id: "inputs", label: "input shapes", width: 140, fold: 3, title: "inputs: dtype[shape] of each argument" },
  { id: "outputs", label: "output shapes", width: 140, fold: 4, title: "outputs: dtype[shape] of each result" },
  {
    id: "params",
    label: "params",
    width: 120,
    num: true,
    value: "params",
    fold: 7,
    title: "parameters (nnx.Param): count (bytes); hover a cell for every Variable type",
  },
  {
    id: "flops",
    label: "FLOPs",
    width: 100,
    num: true,
    value: "flops",
    fold: 8,
    title: "forward FLOPs; the bar: share of the model's",
  },
  {
    id: "bwd",
    label: "backward FLOPs",
    width: 90,
    num: true,
    value: "bwd",
    fold: 6,
    title: "FLOPs of the backward pass (--grad)",
  },
  { id: "bytes", label: "bytes accessed", width: 80, num: true, value: "bytes", fold: 2, title: "bytes accessed" },
  { id: "out", label: "output bytes", width: 70, num: true, value: "out", fold: 1, title: "output (activation) bytes" },
];

export const PATH_MIN_WIDTH = 200; // "blocks[0].attn.query" three levels down

export const CLASS_MAX_WIDTH = 220; // a longer class name is cut, its full text on hover

/**
 * The class column's width for these rows: its 100 px, or wide enough for the longest class name
 * (7 px a character of the table's 12 px font, and the cell's padding), at most CLASS_MAX_WIDTH.
 * @param {Partial<import("../shared/wire").SummaryPayload>} payload
 */
export function classWidth(payload) {
  const rows = Array.isArray(payload.rows) ? payload.rows : [];
  let longest = 0;
  for (const r of rows) longest = Math.max(longest, String((r && r.cls) || "").length);
  return Math.min(CLASS_MAX_WIDTH, Math.max(100, Math.ceil(longest * 7 + 12)));
}

/**
 * The columns this payload shows (bwd FLOPs only with a backward pass), the class column as wide
 * as its names need (classWidth).
 * @param {Partial<import("../shared/wire").SummaryPayload>} payload
 */
export function columnsFor(payload) {
  const cls = classWidth(payload);
  return COLUMNS.filter((c) => c.id !== "bwd" || payload.backward).map((c) =>
    c.id === "cls" ? { ...c, width: cls } : c,
  );
}

/** A header's tooltip: its label, and what it is when the label alone does not say. */
export function headerTitle(c) {
  return c.title ? `${c.label}: ${c.title}` : c.label;
}

/**
 * prepare(payload) -> {rows, parent, kids, roots, total, n}: `parent[i]` the nearest earlier row one
 * level up (-1 for the roots), `kids[i]` its children in call order.
 * @param {Partial<import("../shared/wire").SummaryPayload> | null | undefined} payload the synced trait (traits.py)
 */
export function prepare(payload) {
  const rows = Array.isArray(payload && payload.rows) ? payload.rows : [];
  const parent = new Array(rows.length).fill(-1);
  const kids = rows.map(() => []);
  const roots = [];
  const stack = []; // indexes of the open ancestors, by depth
  rows.forEach((r, i) => {
    const depth = Math.max(0, Number(r.depth) || 0);
    while (stack.length && (Number(rows[stack[stack.length - 1]].depth) || 0) >= depth) stack.pop();
    const p = stack.length ? stack[stack.length - 1] : -1;
    parent[i] = p;
    if (p < 0) roots.push(i);
    else kids[p].push(i);
    stack.push(i);
  });
  const total = Number(payload && payload.total_flops) || 0;
  return { rows, parent, kids, roots, total, n: rows.length };
}

/**
 * Row `i`'s path as its tree row shows it: what it adds to its parent row's path ("mha" under
 * "blocks[0]", "[0]" under "layers", "token_embeddings" under "embedding (call 2)"), or the whole
 * path where it is not under its parent's (the root's children, a module called from elsewhere).
 * The row's title keeps the whole path.
 */
export function ownPath(prep, i) {
  const text = String(prep.rows[i].path_text ?? "");
  const p = prep.parent[i];
  if (p < 0) return text;
  // a module called more than once is "path (call k)" (core/summary/_rows.py): its path is before that
  const base = String(prep.rows[p].path_text ?? "").replace(/ \(call \d+\)$/, "");
  if (base && text.startsWith(`${base}.`) && text.length > base.length + 1) return text.slice(base.length + 1);
  if (base && text.startsWith(`${base}[`)) return text.slice(base.length);
  return text;
}

/** A row's share of the model's FLOPs, 0..1 (0 when the model has none). */
export function share(prep, i) {
  const f = Number(prep.rows[i].flops) || 0;
  return prep.total > 0 ? Math.max(0, Math.min(1, f / prep.total)) : 0;
}

/** Next sort on a header click: numeric columns descending first (the costliest on top), then ascending, then off. */
export function nextSort(sort, column) {
  const col = COLUMNS.find((c) => c.id === column);
  if (!col || !col.value) return sort;
  if (!sort || sort.column !== column) return { column, dir: "desc" };
  return sort.dir === "desc" ? { column, dir: "asc" } : null;
}

function matcher(query) {
  const q = String(query || "")
    .trim()
    .toLowerCase();
  if (!q) return null;
  const words = q.split(/\s+/);
  return (r) => {
    const hay = `${r.path_text} ${r.cls}`.toLowerCase();
    return words.every((w) => hay.includes(w));
  };
}

/**
 * The rows listed, in order: a depth-first walk with each row's children sorted by `sort` (stable:
 * call order among equals) and the children of `collapsed` rows left out. With a `query`, only the
 * rows whose path or class holds every word, and their ancestors (opened: a match is never hidden).
 * Returns {items, matches} (matches: how many rows match; -1 without a query).
 */
export function visibleRows(prep, { query = "", collapsed = new Set(), sort = null } = {}) {
  const match = matcher(query);
  let keep = null;
  let matches = -1;
  if (match) {
    keep = new Set();
    matches = 0;
    for (let i = 0; i < prep.n; i++) {
      if (!match(prep.rows[i])) continue;
      matches++;
      for (let k = i; k >= 0 && !keep.has(k); k = prep.parent[k]) keep.add(k);
    }
  }
  const col = sort && COLUMNS.find((c) => c.id === sort.column);
  const key = col && col.value;
  const sign = sort && sort.dir === "asc" ? 1 : -1;
  const order = (list) => {
    const out = keep ? list.filter((i) => keep.has(i)) : list.slice();
    if (key) {
      const v = (i) => Number(prep.rows[i][key]) || 0;
      out.sort((a, b) => sign * (v(a) - v(b)) || a - b);
    }
    return out;
  };
  const items = [];
  const walk = (list) => {
    for (const i of order(list)) {
      items.push(i);
      if (match || !collapsed.has(i)) walk(prep.kids[i]);
    }
  };
  walk(prep.roots);
  return { items, matches };
}

/** The rows with children, all of them (collapse all) or none (expand all). */
export function allParents(prep) {
  const out = new Set();
  for (let i = 0; i < prep.n; i++) if (prep.kids[i].length) out.add(i);
  return out;
}

/** "12 of 30 module calls" / "30 module calls" / "3 match 'attn'". */
export function showingText(prep, listed, matches, query) {
  const calls = (n) => `${n} module call${n === 1 ? "" : "s"}`;
  if (matches >= 0) return `${calls(matches)} match \u201c${String(query).trim()}\u201d (${listed} rows listed)`;
  return listed === prep.n ? calls(prep.n) : `${listed} of ${calls(prep.n)} listed`;
}
