import { test } from "node:test";
import assert from "node:assert/strict";
import { columnsWidth, fitColumns } from "../src/shared/fit.js";

const COLS = [
  { id: "path", width: null },
  { id: "type", width: 100, fold: 8 },
  { id: "mean", width: 70, fold: 7 },
  { id: "min", width: 70, fold: 4 },
  { id: "max", width: 70, fold: 4 },
  { id: "status", width: 100 },
];

test("columnsWidth counts a flexible column at its minimum", () => {
  assert.equal(columnsWidth(COLS, new Set(["path", "type"]), 150), 250);
});

test("fitColumns folds nothing when everything fits, or before the width is known", () => {
  assert.deepEqual([...fitColumns(COLS, 560)], []);
  assert.deepEqual([...fitColumns(COLS, 0)], []);
});

test("fitColumns folds the lowest rank first, the later column of a tie first, and no more than needed", () => {
  assert.deepEqual([...fitColumns(COLS, 500)], ["max"]);
  assert.deepEqual([...fitColumns(COLS, 420)].sort(), ["max", "min"]);
  assert.deepEqual([...fitColumns(COLS, 350)].sort(), ["max", "mean", "min"]);
  // path and status never fold, even when they do not fit
  assert.deepEqual([...fitColumns(COLS, 10)].sort(), ["max", "mean", "min", "type"]);
});

test("fitColumns counts only the present columns and keeps the user's choices", () => {
  const present = new Set(["path", "type", "mean", "min", "status"]);
  assert.deepEqual([...fitColumns(COLS, 490, { present })], []);
  assert.deepEqual([...fitColumns(COLS, 489, { present })], ["min"]);
  const chosen = new Map([
    ["max", true],
    ["type", false],
  ]);
  // max stays (chosen), type folds (chosen), then min until it fits
  assert.deepEqual([...fitColumns(COLS, 400, { chosen })].sort(), ["min", "type"]);
  assert.deepEqual([...fitColumns(COLS, 0, { chosen })], ["type"]);
});
