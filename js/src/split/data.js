// @ts-check
// The split report's pure parts (no DOM): columns, marks, row kinds, the filter toggle.
//
// A report is SplitReport.to_dict() plus `code` and `names`:
//   {root_type, filters: [{label, name, count, size, bytes, types, shadowing}],
//    rows: {path, type, shape, dtype, nbytes, taken_by, matched_by, aliases}, problems, code, names}
// taken_by[r]: the filter that took row r (null: no filter matched it, the remainder);
// matched_by[r]: every filter that matched it, in order (the first one took it).

import { filterColor } from "../shared/colors.js";

/** The key of the remainder column (and of the table filter showing the remainder). */
export const REST = "rest";

const list = (x) => (Array.isArray(x) ? x : []);

/**
 * prepare(report) -> {n, rows, filters, rest, problems, code, rootType}: the report with every
 * field defaulted, per filter the rows it took and the rows it matched but an earlier filter took
 * (shadowed), and the remainder (rows no filter matched).
 * @param {Partial<import("../shared/wire").SplitReport> | null | undefined} report the synced trait (traits.py)
 */
export function prepare(report) {
  const rep = report && typeof report === "object" ? report : {};
  const raw = rep.rows && typeof rep.rows === "object" ? rep.rows : {};
  const path = list(raw.path).map((p) => String(p ?? ""));
  const n = path.length;
  const col = (name, dflt) => {
    const c = list(raw[name]);
    return Array.from({ length: n }, (_, r) => (c[r] === undefined ? dflt : c[r]));
  };
  const rows = {
    path,
    type: col("type", "").map((t) => String(t ?? "")),
    shape: col("shape", null),
    dtype: col("dtype", null),
    nbytes: col("nbytes", null),
    taken_by: col("taken_by", null).map((t) => (Number.isInteger(t) ? t : null)),
    matched_by: col("matched_by", []).map((m) => list(m).filter(Number.isInteger)),
    aliases: col("aliases", []).map((a) => list(a).map(String)),
  };
  const names = list(rep.names);
  const filters = list(rep.filters).map((f, i) => {
    const o = f && typeof f === "object" ? f : {};
    const name = names[i + 1] !== undefined ? String(names[i + 1]) : String(o.name ?? `filter${i + 1}`);
    return {
      index: i,
      name,
      label: String(o.label ?? ""),
      count: Number.isFinite(o.count) ? o.count : 0,
      bytes: Number.isFinite(o.bytes) ? o.bytes : 0,
      size: Number.isFinite(o.size) ? o.size : 0,
      types: o.types && typeof o.types === "object" ? o.types : {},
      shadowing: Number.isFinite(o.shadowing) ? o.shadowing : 0,
      color: filterColor(i),
      taken: 0,
      shadowed: 0,
    };
  });
  const rest = { count: 0, bytes: 0 };
  for (let r = 0; r < n; r++) {
    const t = rows.taken_by[r];
    if (t === null) {
      rest.count += 1;
      rest.bytes += rows.nbytes[r] || 0;
    } else if (filters[t]) filters[t].taken += 1;
    for (const m of rows.matched_by[r]) if (m !== t && filters[m]) filters[m].shadowed += 1;
  }
  return {
    n,
    rows,
    filters,
    rest,
    rootType: String(rep.root_type ?? ""),
    problems: list(rep.problems).map(String),
    code: String(rep.code ?? ""),
  };
}

/** "taken" where filter `f` took row `r`, "shadowed" where it matched but an earlier one took it, else null. */
export function markOf(prep, r, f) {
  if (prep.rows.taken_by[r] === f) return "taken";
  return prep.rows.matched_by[r].includes(f) ? "shadowed" : null;
}

/** "remainder" (no filter matched), "shadowed" (more than one matched) or "" for row `r`. */
export function rowKind(prep, r) {
  if (prep.rows.taken_by[r] === null) return "remainder";
  return prep.rows.matched_by[r].length > 1 ? "shadowed" : "";
}

/** Whether some Variable matched no filter (the remainder column is shown only then). */
export function hasRemainder(prep) {
  return prep.rest.count > 0;
}

/**
 * The table's columns, left to right: the Variable's own, then one per filter, then the
 * remainder when there is one. {id, kind: "var"|"filter"|"rest", ...}. A Variable's own columns
 * but its path fold at a narrow output (`fold`: the lowest first); a filter's column never does.
 */
export const VAR_COLUMNS = [
  { id: "path", label: "path", width: null },
  { id: "type", label: "type", width: 96, fold: 3, title: "the Variable's type" },
  { id: "shape", label: "shape", width: 96, num: true, fold: 4 }, // "(64, 4, 16)" in full
  { id: "dtype", label: "dtype", width: 72, fold: 1 },
  { id: "bytes", label: "bytes", width: 66, num: true, fold: 2 },
];
export const PATH_MIN_WIDTH = 200;
export const FILTER_WIDTH = 104;
export const REST_WIDTH = 92;

/**
 * The split report's columns: the Variable columns, one per filter, and the remainder's.
 * @returns {Array<{id: string, kind: string, width: number | null, label?: string, fold?: number,
 *   title?: string, num?: boolean, filter?: object}>}
 */
export function columns(prep) {
  /** @type {ReturnType<typeof columns>} */
  const cols = VAR_COLUMNS.map((c) => ({ ...c, kind: "var" }));
  for (const f of prep.filters) cols.push({ id: `f-${f.index}`, kind: "filter", filter: f, width: FILTER_WIDTH });
  if (hasRemainder(prep)) cols.push({ id: REST, kind: "rest", width: REST_WIDTH });
  return cols;
}

export function tableWidth(cols) {
  return cols.reduce((s, c) => s + (c.width ?? PATH_MIN_WIDTH), 0);
}

/** Header click: the same key again shows everything (null), another key shows that one. */
export function toggleActive(active, key) {
  return active === key ? null : key;
}

/**
 * Rows shown for the table filter `active`: null -> every row; a filter index -> the rows that
 * filter matched (taken or shadowed: every row with a mark in its column); REST -> the remainder.
 */
export function visibleRows(prep, active) {
  const out = [];
  for (let r = 0; r < prep.n; r++) {
    if (active === null || active === undefined) out.push(r);
    else if (active === REST) {
      if (prep.rows.taken_by[r] === null) out.push(r);
    } else if (prep.rows.matched_by[r].includes(active) || prep.rows.taken_by[r] === active) out.push(r);
  }
  return out;
}

/** The line above the table: what is shown. */
export function showingText(prep, active, shown) {
  const all = `${prep.n} Variable${prep.n === 1 ? "" : "s"}`;
  if (active === null || active === undefined) return `${all} \u00B7 click a filter column to show only its Variables`;
  if (active === REST) return `remainder: ${shown} of ${all} matched no filter \u00B7 click again to show all`;
  const f = prep.filters[active];
  if (!f) return all;
  const extra = f.shadowed ? ` + ${f.shadowed} matched but taken by an earlier filter` : "";
  return `${f.name}: ${f.taken} taken${extra} (${shown} of ${all}) \u00B7 click again to show all`;
}

/** The title (tooltip) of filter `f`'s column header. */
export function filterTitle(f) {
  const types = Object.entries(f.types)
    .map(([t, k]) => `${t} ${k}`)
    .join(", ");
  const lines = [
    `filter ${f.index + 1}: ${f.label}`,
    `state: ${f.name}`,
    `took ${f.count} Variable${f.count === 1 ? "" : "s"}${types ? ` (${types})` : ""}`,
  ];
  if (f.shadowed) lines.push(`matched ${f.shadowed} more that an earlier filter took (hollow marks)`);
  if (f.shadowing) lines.push(`${f.shadowing} of those it took also match a later filter`);
  lines.push("click: show only the Variables this filter matched");
  return lines.join("\n");
}
