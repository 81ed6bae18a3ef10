import test from "node:test";
import assert from "node:assert/strict";

import { COLUMNS, PATH_MIN_WIDTH, hiddenColumns, tableMinWidth } from "../src/shared/columns.js";

const base = {
  tables: { sharding: [], devices: ["cpu:0"], status: ["ok"] },
  stats: { nan_count: [0, 0], inf_count: [0, null] },
};

test("columns with nothing to say are hidden", () => {
  assert.deepEqual([...hiddenColumns(base)].sort(), [
    "g_norm",
    "g_ratio",
    "nonfinite",
    "place",
    "since",
    "status",
    "u_ratio",
  ]);
});

test("placement shows for sharded or multi-device models", () => {
  assert.ok(!hiddenColumns({ ...base, tables: { ...base.tables, sharding: ["P('data')"] } }).has("place"));
  assert.ok(!hiddenColumns({ ...base, tables: { ...base.tables, devices: ["cpu:0", "cpu:1"] } }).has("place"));
});

test("NaN/Inf and status columns appear when a row needs them", () => {
  assert.ok(!hiddenColumns({ ...base, stats: { nan_count: [0, 2], inf_count: [0, 0] } }).has("nonfinite"));
  assert.ok(!hiddenColumns({ ...base, stats: { nan_count: [0, 0], inf_count: [1, 0] } }).has("nonfinite"));
  assert.ok(!hiddenColumns({ ...base, tables: { ...base.tables, status: ["ok", "deleted"] } }).has("status"));
  // a live row with a note (its metadata repr raised): the status column says it
  assert.ok(
    !hiddenColumns({ ...base, rows: { note: [null, "metadata tag: its repr raised ValueError: boom"] } }).has("status"),
  );
  assert.ok(hiddenColumns({ ...base, rows: { note: [null, null] } }).has("status"));
});

test("an empty payload hides what it cannot fill", () => {
  assert.deepEqual([...hiddenColumns({})].sort(), [
    "g_norm",
    "g_ratio",
    "nonfinite",
    "place",
    "since",
    "status",
    "u_ratio",
  ]);
});

test("the minimum width leaves hidden columns out and fits a notebook output", () => {
  const all = COLUMNS.reduce((s, c) => s + (c.width ?? PATH_MIN_WIDTH), 0);
  assert.equal(tableMinWidth(), all);
  const single = tableMinWidth(hiddenColumns(base));
  assert.equal(single, all - 100 - 84 - 96 - 70 * 4); // (96: status) // placement, nonfinite, status; 70: the series and "since"
  // JupyterLab's and Notebook 6.5's outputs are about 900-1150 px wide at 1280 px; narrower ones scroll sideways
  assert.ok(single <= 900, `single-device table needs ${single}px`);
});

test("the since column shows once a baseline is pinned (compare to)", () => {
  assert.ok(!hiddenColumns({ ...base, stats: { ...base.stats, since: [0.1, null] } }).has("since"));
});

test("the gradient columns show only with a gradient series", () => {
  const withGrads = hiddenColumns({ ...base, stats: { ...base.stats, g_norm: [1, 2], g_ratio: [0.1, 0.2] } });
  assert.ok(!withGrads.has("g_norm") && !withGrads.has("g_ratio") && withGrads.has("u_ratio"));
});

test("at JupyterLab's 1048 px and 800 px outputs the viewer folds the least important columns first", async () => {
  const { fitColumns } = await import("../src/shared/fit.js");
  // gradients, ratio and update beside the statistics; one device, every row ok (issue 35's widths less padding)
  const payload = { ...base, stats: { ...base.stats, g_norm: [1], g_ratio: [1], u_ratio: [1] } };
  const hidden = hiddenColumns(payload);
  const present = new Set(COLUMNS.filter((c) => !hidden.has(c.id)).map((c) => c.id));
  const fold = (w) => [...fitColumns(COLUMNS, w, { present, minWidth: PATH_MIN_WIDTH })].sort();
  assert.deepEqual(fold(1028), ["bytes", "dtype"]);
  assert.deepEqual(fold(780), ["bytes", "dtype", "max", "min", "std"]);
  assert.ok(tableMinWidth(new Set([...hidden, ...fold(780)])) <= 780);
});
