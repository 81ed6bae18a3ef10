// @ts-check
// Sorting the tree table's rows by a column: each module's children ordered by the column's
// value (Variables among themselves; modules by key or aggregate where that means something).
// Pure, no DOM; `tree` is from tree.js's buildTree.

import { keyText, shapeSize } from "./format.js";
import { STAT_COLUMNS } from "./constants.js";
import { SERIES_COLUMNS } from "./columns.js";
import { tableText } from "./tables.js";

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

const STAT_COLS = new Set([...STAT_COLUMNS, ...SERIES_COLUMNS, "since"]);

/** A row's sort value for a column: number, string, or null (sorts last). */
export function rowSortValue(tree, r, column) {
  const snap = tree.snap;
  const rows = snap.rows || {};
  const tables = snap.tables || {};
  const at = (c) => (rows[c] ? rows[c][r] : null);
  switch (column) {
    case "path":
      return keyText(tree.rowKey[r], true);
    case "type":
      return tree.rowType[r] || null;
    case "shape":
      return shapeSize(at("shape"));
    case "dtype":
      return tableText(tables, "dtype", at("dtype")) || null;
    case "bytes":
      return at("nbytes") ?? null;
    case "place":
      return tableText(tables, "sharding", at("sharding")) || tableText(tables, "devices", at("devices")) || null;
    case "nonfinite": {
      const st = snap.stats || {};
      const a = st.nan_count ? st.nan_count[r] : null;
      const b = st.inf_count ? st.inf_count[r] : null;
      return a === null && b === null ? null : (a || 0) + (b || 0);
    }
    case "status": {
      const t = tableText(tables, "status", at("status"));
      return t === "ok" ? "" : t || null;
    }
    default:
      if (STAT_COLS.has(column)) {
        const c = snap.stats && snap.stats[column];
        const v = c ? c[r] : null;
        return typeof v === "number" && !Number.isNaN(v) ? v : null;
      }
      return null;
  }
}

/** A module's sort value: key for path, aggregate bytes, Variable count for shape; else null. */
export function moduleSortValue(tree, i, column) {
  switch (column) {
    case "path":
      return keyText(tree.nodeKey[i], true);
    case "bytes":
      return tree.nodeBytes[i];
    case "shape":
      return tree.nodeCount[i];
    default:
      return null;
  }
}

// Columns where modules sort together with Variables by their aggregate.
const MIXED = new Set(["path", "bytes"]);

function compareValues(a, b, dir) {
  const an = a === null || a === undefined;
  const bn = b === null || b === undefined;
  if (an || bn) return an && bn ? 0 : an ? 1 : -1; // nulls last either way
  let c;
  if (typeof a === "number" && typeof b === "number") c = a < b ? -1 : a > b ? 1 : 0;
  else c = collator.compare(String(a), String(b));
  return dir === "desc" ? -c : c;
}

/**
 * Children lists sorted by `column` (`dir` "asc"/"desc"): Variables within each module; for
 * path and bytes modules sort among them by key/aggregate; otherwise Variables come first and
 * modules keep their order (sorted by Variable count for shape). Returns tree.kids if unsorted.
 */
export function sortKids(tree, column, dir) {
  if (!column || !dir) return tree.kids;
  const N = tree.N;
  const rowVal = new Array(tree.R);
  for (let r = 0; r < tree.R; r++) rowVal[r] = rowSortValue(tree, r, column);
  const val = (id) => (id < N ? moduleSortValue(tree, id, column) : rowVal[id - N]);
  const mixed = MIXED.has(column);
  return tree.kids.map((list) => {
    if (list.length < 2) return list;
    if (mixed) return list.slice().sort((a, b) => compareValues(val(a), val(b), dir));
    const vars = [];
    const mods = [];
    for (const id of list) (id < N ? mods : vars).push(id);
    vars.sort((a, b) => compareValues(val(a), val(b), dir));
    if (column === "shape") mods.sort((a, b) => compareValues(val(a), val(b), dir));
    return vars.concat(mods);
  });
}
