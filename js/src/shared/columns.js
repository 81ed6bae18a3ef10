// @ts-check
// Table columns: id (cell class c-<id>, header data-col), header label, width (px; null = the
// rest), numeric alignment, sortable, and fold: the rank at which a column folds into the "+N
// columns" picker when the output is too narrow (shared/fit.js; lowest first; none = never folds).
import {
  HISTORY_STATS,
  NONFINITE_LABEL,
  SERIES_COLUMNS,
  SERIES_LABELS,
  STAT_COLUMNS,
  STAT_LABELS,
} from "./constants.js";

// Statistic columns and labels come from Python (render.STAT_COLUMNS, STAT_LABELS), widths from here.
const STAT_WIDTHS = { mean: 74, std: 70, min: 74, max: 74, norm: 70 };
// The key statistics (mean, norm) stay longest; min and max fold first.
const STAT_FOLDS = { mean: 8, std: 5, min: 3, max: 3, norm: 7 };

// Columns of the series beside the rows (viewer/series.js puts them among a payload's statistics):
// each shown only when the payload has that series (gradients given; the update measured or given).
// Ids and labels from Python (render.SERIES_COLUMNS, SERIES_LABELS: the saved notebook's table shows the same).
export { SERIES_COLUMNS };

/**
 * A table column: `width` null takes what is left; `fold` orders which fold first when narrow.
 * @typedef {{id: string, label: string, width: number | null, num?: boolean, fold?: number, title?: string,
 *   sortable?: boolean}} Column
 */

/** @type {Column[]} */
export const COLUMNS = [
  { id: "path", label: "path", width: null },
  // never folds: a module's row spans its path over the type column (treerows.js, colspan 2)
  { id: "type", label: "type", width: 104 }, // "Intermediate", "Perturbation" and their chip in full
  { id: "shape", label: "shape", width: 92, num: true, fold: 9 }, // "(6, 64, 32)" in full
  { id: "dtype", label: "dtype", width: 70, fold: 1 },
  { id: "bytes", label: "bytes", width: 66, num: true, fold: 2 },
  { id: "place", label: "placement", width: 100, title: "sharding if any, else devices", fold: 6 },
  ...STAT_COLUMNS.map((id) => ({
    id,
    label: STAT_LABELS[id],
    width: STAT_WIDTHS[id] ?? 74,
    num: true,
    fold: STAT_FOLDS[id] ?? 4,
  })),
  ...SERIES_COLUMNS.map((id) => ({
    id,
    label: SERIES_LABELS[id][0],
    width: 70,
    num: true,
    title: SERIES_LABELS[id][1],
    fold: id === "g_norm" ? 8 : 7,
  })),
  // each row's change since the viewer's pinned baseline (viewer/baseline.js): shown once one is pinned
  {
    id: "since",
    label: "since",
    width: 70,
    num: true,
    title: "change since the pinned baseline (compare to)",
    fold: 8,
  },
  { id: "nonfinite", label: NONFINITE_LABEL, width: 84, num: true },
  {
    id: "spark",
    label: "trend",
    width: 56,
    sortable: false,
    title: "the chosen statistic over the last refreshes",
    fold: 6,
  },
  { id: "status", label: "status", width: 96 },
];

// Statuses that only say why a row has no statistics, as its type or dtype does (a RngKey's
// "prng_key"): a status column holding nothing else folds before the statistics when narrow.
const QUIET_STATUSES = new Set(["ok", "prng_key", "non_numeric", "abstract"]);

/** COLUMNS with the status column foldable (first, with dtype): for a payload whose statuses are all quiet. */
export const COLUMNS_QUIET_STATUS = COLUMNS.map((c) => (c.id === "status" ? { ...c, fold: 1 } : c));

const OK_STATUS = new Set(["ok"]);

/** Whether every status of `payload` is one of `allowed` and no row has a note. */
function statusesWithin(payload, allowed) {
  const tables = (payload && payload.tables) || {};
  const rows = (payload && payload.rows) || {};
  return (tables.status || []).every((s) => allowed.has(s)) && !(rows.note || []).some((v) => v);
}

/** Whether every status of `payload` is quiet (QUIET_STATUSES) and no row has a note. */
export function quietStatus(payload) {
  return statusesWithin(payload, QUIET_STATUSES);
}

export const PATH_MIN_WIDTH = 150;

/** Minimum table width with the columns in `hidden` (a Set of ids) left out. */
export function tableMinWidth(hidden = new Set()) {
  return COLUMNS.filter((c) => !hidden.has(c.id)).reduce((s, c) => s + (c.width ?? PATH_MIN_WIDTH), 0);
}

export const TABLE_MIN_WIDTH = tableMinWidth();

/**
 * Columns that say nothing for this payload, so a notebook-wide output has room for the rest:
 * placement when nothing is sharded, everything is on one device (the device strip says
 * where) and no annotation disagrees with it, NaN/Inf when there are none (the banner appears with them), status when every row is ok
 * and none has a note.
 */
export function hiddenColumns(payload) {
  const hidden = new Set();
  const tables = (payload && payload.tables) || {};
  const stats = (payload && payload.stats) || {};
  const rows = (payload && payload.rows) || {};
  const mismatched = (rows.mismatch || []).some((v) => v);
  if (!(tables.sharding || []).length && (tables.devices || []).length <= 1 && !mismatched) hidden.add("place");
  const any = (col) => (col || []).some((v) => v);
  if (!any(stats.nan_count) && !any(stats.inf_count)) hidden.add("nonfinite");
  // A note on a live row (a metadata repr that raised) keeps the column: the row says it.
  if (statusesWithin(payload, OK_STATUS)) hidden.add("status");
  for (const id of SERIES_COLUMNS) if (!stats[id]) hidden.add(id);
  if (!stats.since) hidden.add("since");
  return hidden;
}

// The statistics the history keeps (nnx_lab.core.history.HISTORY_STATS): the sparkline's choices.
export const STAT_CHOICES = HISTORY_STATS;

/** Next sort state on a header click: asc -> desc -> off. */
export function nextSort(sort, column) {
  if (!sort || sort.column !== column) return { column, dir: "asc" };
  if (sort.dir === "asc") return { column, dir: "desc" };
  return null;
}
