// @ts-check
// The memory widget's rows as a tree (pure, no DOM): device -> holder -> group from the rows' depths
// (Python lists them depth first), which rows a filter or collapse lists, a sort among siblings.

/**
 * Columns: id (cell class c-<id>), label, width (px; null = the rest), numeric, sort value key, and
 * `fold`: at a narrow output the lowest folds first (behind the "+N columns" picker); none = never.
 */
export const COLUMNS = [
  { id: "label", label: "device / holder / group", width: null, value: "label", text: true },
  { id: "kind", label: "kind", width: 100, fold: 2, title: "module, optimizer, pytree, output cache, unreached" },
  { id: "arrays", label: "buffers", width: 64, num: true, value: "arrays", fold: 1, title: "buffers counted here" },
  {
    id: "bytes",
    label: "bytes",
    width: 150,
    num: true,
    value: "bytes",
    title: "bytes counted here; the bar: share of the device's limit (without one, as on CPU: of its live arrays)",
  },
  { id: "shared", label: "shared", width: 250, fold: 3, title: "buffers other names reach too (each counted once)" },
];

const SHARED_MAX_WIDTH = 380;

/** The width the shared column's longest text needs (6.5 px a character of the 12px font, and the padding). */
export function sharedNeed(/** @type {{rows: Array<{shared?: unknown}>}} */ prep) {
  let longest = 0;
  for (const r of prep.rows) longest = Math.max(longest, String(r.shared ?? "").length);
  return Math.ceil(longest * 6.5 + 16);
}

/**
 * The width the holder column's longest label needs: its indent (14 px a level, memory.js), the
 * fold arrow and 7.2 px a character, at least LABEL_MIN_WIDTH.
 * @param {{rows: Array<{label?: unknown, depth?: unknown}>}} prep
 */
export function labelNeed(prep) {
  let need = LABEL_MIN_WIDTH;
  for (const r of prep.rows) {
    const depth = Math.max(0, Number(r.depth) || 0);
    need = Math.max(need, Math.ceil(26 + depth * 14 + String(r.label ?? "").length * 7.2));
  }
  return need;
}

/**
 * The shared column's width: its 250 px (what the fit folds by), grown up to what its longest text
 * needs (at most SHARED_MAX_WIDTH) into the room the other shown columns and the holder column's
 * labels leave: "158.4 MiB shared with model (counted there)" whole beside short holder names, not
 * cut beside a half-empty holder column; as before where the output is narrow.
 * @param {number} need sharedNeed(prep)
 * @param {number} room the table's room (tableRoom of the root's width)
 * @param {number} others the widths of the other shown columns, the holder column's excepted
 * @param {number} label labelNeed(prep)
 */
export function sharedWidth(need, room, others, label) {
  const base = COLUMNS.find((c) => c.id === "shared")?.width ?? 250;
  return Math.max(base, Math.min(need, SHARED_MAX_WIDTH, room - others - label));
}

export const LABEL_MIN_WIDTH = 190; // "(unreached)" and "Out[12]" two levels down, a Variable type three

/** A header's tooltip: its label, and what it is when the label alone does not say. */
export function headerTitle(c) {
  return c.title ? `${c.label}: ${c.title}` : c.label;
}

/**
 * prepare(payload) -> {rows, parent, kids, roots, n}: the tree from the rows' depths, in order.
 * @param {Partial<import("../shared/wire").LedgerPayload> | null | undefined} payload the synced trait (traits.py)
 */
export function prepare(payload) {
  const rows = Array.isArray(payload && payload.rows) ? payload.rows : [];
  const parent = new Array(rows.length).fill(-1);
  const kids = rows.map(() => []);
  const roots = [];
  const stack = [];
  rows.forEach((r, i) => {
    const depth = Math.max(0, Number(r.depth) || 0);
    while (stack.length && (Number(rows[stack[stack.length - 1]].depth) || 0) >= depth) stack.pop();
    const p = stack.length ? stack[stack.length - 1] : -1;
    parent[i] = p;
    if (p < 0) roots.push(i);
    else kids[p].push(i);
    stack.push(i);
  });
  return { rows, parent, kids, roots, n: rows.length };
}

/** A row's bar width, 0..1 (Python's share of the device's limit or live arrays). */
export function share(row) {
  const s = Number(row && row.share);
  return Number.isFinite(s) ? Math.max(0, Math.min(1, s)) : 0;
}

/** Next sort on a header click: numbers descending first, names ascending first; the third click: off. */
export function nextSort(sort, column) {
  const col = COLUMNS.find((c) => c.id === column);
  if (!col || !col.value) return sort;
  const first = col.text ? "asc" : "desc";
  if (!sort || sort.column !== column) return { column, dir: first };
  return sort.dir === first ? { column, dir: first === "asc" ? "desc" : "asc" } : null;
}

function matcher(query) {
  const q = String(query || "")
    .trim()
    .toLowerCase();
  if (!q) return null;
  const words = q.split(/\s+/);
  return (r) => {
    const hay = `${r.label} ${r.kind || ""}`.toLowerCase();
    return words.every((w) => hay.includes(w));
  };
}

/**
 * The rows listed, in order: depth first, each row's children sorted by `sort` (stable: Python's
 * order, biggest first, among equals) and the children of `collapsed` rows left out. With a
 * `query`, the rows whose label or kind holds every word, their ancestors (opened) and, for a
 * matched holder, its groups. Returns {items, matches} (matches: -1 without a query).
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
      for (const c of prep.kids[i]) keep.add(c);
    }
  }
  const col = sort && COLUMNS.find((c) => c.id === sort.column);
  const key = col && col.value;
  const sign = sort && sort.dir === "asc" ? 1 : -1;
  const order = (list) => {
    const out = keep ? list.filter((i) => keep.has(i)) : list.slice();
    if (key && col.text) {
      out.sort((a, b) => sign * String(prep.rows[a][key]).localeCompare(String(prep.rows[b][key])) || a - b);
    } else if (key) {
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

/** The holders (depth 1) with groups: "holders only" collapses them, leaving devices open. */
export function holderRows(prep) {
  const out = new Set();
  for (let i = 0; i < prep.n; i++) if (Number(prep.rows[i].depth) === 1 && prep.kids[i].length) out.add(i);
  return out;
}

/** "7 holders on 1 device" / "2 of 7 holders match “grads”". */
export function showingText(prep, matches, query) {
  let holders = 0;
  let devices = 0;
  for (const r of prep.rows) {
    if (Number(r.depth) === 1) holders++;
    else if (Number(r.depth) === 0) devices++;
  }
  const noun = (n, w) => `${n} ${w}${n === 1 ? "" : "s"}`;
  if (matches >= 0) return `${noun(matches, "row")} match \u201c${String(query).trim()}\u201d`;
  return `${noun(holders, "holder")} on ${noun(devices, "device")}`;
}
