import test from "node:test";
import assert from "node:assert/strict";
import { sparkPath } from "../src/shared/sparkline.js";
import { typeColor, TYPE_COLORS } from "../src/shared/colors.js";

test("sparkline spans the box, low values at the bottom", () => {
  assert.equal(sparkPath([0, 1, 2], 60, 14, 1), "M1 13L30 7L59 1");
});

test("sparkline breaks at NaN and marks isolated points", () => {
  const d = sparkPath([0, NaN, 1, 2], 31, 10, 0);
  assert.equal(d, "M-1 10h2M20.7 5L31 0");
});

test("sparkline of flat, single or missing data", () => {
  assert.equal(sparkPath([3, 3], 10, 10, 0), "M0 5L10 5");
  assert.equal(sparkPath([3], 10, 10, 0), "M4 5h2");
  assert.equal(sparkPath([NaN, NaN], 10, 10, 0), "");
  assert.equal(sparkPath([], 10, 10, 0), "");
});

test("type colours: fixed for flax types, stable hash otherwise", () => {
  assert.equal(typeColor("Param"), TYPE_COLORS.Param);
  assert.equal(typeColor("BatchStat"), TYPE_COLORS.BatchStat);
  assert.match(typeColor("MyVar"), /^hsl\(\d+, 50%, 52%\)$/);
  assert.equal(typeColor("MyVar"), typeColor("MyVar"));
  assert.notEqual(typeColor("MyVar"), typeColor("OtherVar"));
  assert.equal(typeColor("constructor"), typeColor("constructor"));
  assert.match(typeColor("constructor"), /^hsl/);
});

test("a span at float32 noise level is flat, a real change is not", () => {
  // History arrives as float32, refreshes as JSON doubles: the same rounded value, two precisions.
  const flat = sparkPath([Math.fround(3.169), 3.169, 3.169], 60, 14);
  assert.equal(new Set(flat.match(/ [\d.]+/g)).size, 1, flat);
  const moving = sparkPath([3.169, 3.2, 3.3], 60, 14);
  assert.ok(new Set(moving.match(/ [\d.]+/g)).size > 1, moving);
});
