import test from "node:test";
import assert from "node:assert/strict";
import { windowRange, scrollToShow } from "../src/shared/virtual.js";
import { nextSort } from "../src/shared/columns.js";

test("window at the top", () => {
  assert.deepEqual(windowRange(0, 400, 20, 10000, 10), { first: 0, last: 30 });
  assert.deepEqual(windowRange(0, 400, 20, 10000, 0), { first: 0, last: 20 });
});

test("window in the middle, with overscan both sides", () => {
  assert.deepEqual(windowRange(2010, 400, 20, 10000, 10), { first: 90, last: 131 });
  assert.deepEqual(windowRange(2000, 400, 20, 10000, 5), { first: 95, last: 125 });
});

test("window at the end is clamped", () => {
  assert.deepEqual(windowRange(199600, 400, 20, 10000, 10), { first: 9970, last: 10000 });
  assert.deepEqual(windowRange(1e9, 400, 20, 10000, 10), { first: 10000, last: 10000 });
});

test("small and degenerate inputs", () => {
  assert.deepEqual(windowRange(0, 400, 20, 5, 10), { first: 0, last: 5 });
  assert.deepEqual(windowRange(0, 400, 20, 0, 10), { first: 0, last: 0 });
  assert.deepEqual(windowRange(-50, 400, 20, 100, 0), { first: 0, last: 20 });
  assert.deepEqual(windowRange(0, 0, 20, 100, 3), { first: 0, last: 3 });
});

test("DOM rows stay bounded however many rows there are", () => {
  for (const total of [10, 1000, 10000, 1000000]) {
    for (const top of [0, 12345, 1e6]) {
      const { first, last } = windowRange(top, 420, 20, total, 12);
      assert.ok(last - first <= Math.ceil(420 / 20) + 1 + 24, `${total} ${top}`);
    }
  }
});

test("scrollToShow keeps a visible row, centres a hidden one", () => {
  assert.equal(scrollToShow(5, 0, 400, 20), 0);
  assert.equal(scrollToShow(500, 0, 400, 20), 500 * 20 + 10 - 200);
  assert.equal(scrollToShow(1, 4000, 400, 20), 0);
});

test("header click cycles asc -> desc -> off", () => {
  let s = nextSort(null, "bytes");
  assert.deepEqual(s, { column: "bytes", dir: "asc" });
  s = nextSort(s, "bytes");
  assert.deepEqual(s, { column: "bytes", dir: "desc" });
  assert.equal(nextSort(s, "bytes"), null);
  assert.deepEqual(nextSort({ column: "bytes", dir: "desc" }, "norm"), { column: "norm", dir: "asc" });
});
