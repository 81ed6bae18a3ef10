import test from "node:test";
import assert from "node:assert/strict";
import { RingStore, History, toFloat32 } from "../src/shared/ring.js";
import { sequential } from "./fixtures.js";

const arr = (f32) => Array.from(f32, (v) => (Number.isNaN(v) ? null : Math.round(v * 1000) / 1000));

test("ring appends, null becomes NaN, wraps at capacity", () => {
  const r = new RingStore(3);
  r.reset(2);
  r.append([1, 10]);
  r.append([2, null]);
  assert.deepEqual(arr(r.series(0)), [1, 2]);
  assert.deepEqual(arr(r.series(1)), [10, null]);
  r.append([3, 30]);
  r.append([4, 40]);
  assert.deepEqual(arr(r.series(0)), [2, 3, 4]);
  assert.deepEqual(arr(r.series(1)), [null, 30, 40]);
  assert.deepEqual(arr(r.series(5)), []);
});

test("ring replace keeps the newest values", () => {
  const r = new RingStore(3);
  r.replace(new Float32Array([1, 2, 3, 4, 10, 20, 30, 40]), 2, 4);
  assert.deepEqual(arr(r.series(0)), [2, 3, 4]);
  assert.deepEqual(arr(r.series(1)), [20, 30, 40]);
  r.append([5, 50]);
  assert.deepEqual(arr(r.series(0)), [3, 4, 5]);
  r.replace(new Float32Array([7, 70]), 2, 1);
  assert.deepEqual(arr(r.series(1)), [70]);
});

function snap(refresh, structure = 1, norm = [0, 1, 2, 3, 4, 5]) {
  const s = sequential({ refresh, structure });
  s.stats.norm = norm;
  return s;
}

test("history: each new refresh appends, repeats do not", () => {
  const h = new History("norm", 100);
  assert.equal(h.onSnapshot(snap(1)), true); // first: ask for history
  assert.equal(h.onSnapshot(snap(2, 1, [9, 9, 9, 9, 9, null])), false);
  assert.equal(h.onSnapshot(snap(2, 1, [7, 7, 7, 7, 7, 7])), false); // same refresh again
  assert.deepEqual(arr(h.series(1)), [1, 9]);
  assert.deepEqual(arr(h.series(5)), [5, null]);
  assert.equal(h.onSnapshot({}), false);
});

test("history: structure change clears the rings and asks again", () => {
  const h = new History("norm", 100);
  h.onSnapshot(snap(1));
  h.onSnapshot(snap(2));
  assert.equal(h.onSnapshot(snap(3, 2)), true);
  assert.deepEqual(arr(h.series(0)), [0]);
});

test("history reply replaces the rings, then newer refreshes are re-appended", () => {
  const h = new History("norm", 100);
  h.onSnapshot(snap(5));
  h.onSnapshot(snap(6, 1, [60, 61, 62, 63, 64, 65]));
  const L = 3;
  const flat = new Float32Array(6 * L).map((_, k) => Math.floor(k / L) * 100 + (k % L));
  flat[5 * L] = NaN;
  // A reply covering refreshes up to 5: refresh 6 must follow it.
  const ok = h.onHistory(
    { type: "history", stat: "norm", structure: 1, rows: 6, length: L, refresh: 5 },
    new DataView(flat.buffer),
  );
  assert.equal(ok, true);
  assert.deepEqual(arr(h.series(0)), [0, 1, 2, 60]);
  assert.deepEqual(arr(h.series(5)), [null, 501, 502, 65]);
  // Refresh 6 arriving again does not duplicate.
  h.onSnapshot(snap(6, 1, [60, 61, 62, 63, 64, 65]));
  assert.equal(h.series(0).length, 4);
});

test("history reply newer than the latest snapshot swallows that snapshot", () => {
  const h = new History("norm", 100);
  h.onSnapshot(snap(1));
  const flat = new Float32Array(6 * 2).fill(1);
  assert.equal(
    h.onHistory({ type: "history", stat: "norm", structure: 1, rows: 6, length: 2, refresh: 2 }, flat),
    true,
  );
  h.onSnapshot(snap(2)); // already in the reply
  assert.equal(h.series(0).length, 2);
  h.onSnapshot(snap(3));
  assert.equal(h.series(0).length, 3);
});

test("history replies for another stat, structure or size are ignored", () => {
  const h = new History("norm", 100);
  h.onSnapshot(snap(1));
  const flat = new Float32Array(12);
  const base = { type: "history", stat: "norm", structure: 1, rows: 6, length: 2, refresh: 1 };
  assert.equal(h.onHistory({ ...base, stat: "mean" }, flat), false);
  assert.equal(h.onHistory({ ...base, structure: 2 }, flat), false);
  assert.equal(h.onHistory({ ...base, rows: 5 }, flat), false);
  assert.equal(h.onHistory({ ...base, length: 3 }, flat), false); // buffer too short
  assert.equal(h.onHistory(base, null), false);
  assert.equal(h.series(0).length, 1);
});

test("history: another statistic restarts from the latest snapshot", () => {
  const h = new History("norm", 100);
  h.onSnapshot(snap(1));
  h.onSnapshot(snap(2));
  assert.equal(h.setStat("mean"), true);
  assert.deepEqual(arr(h.series(1)), [-0.264]);
  assert.equal(h.setStat("mean"), false);
});

test("toFloat32 accepts DataView, ArrayBuffer, typed arrays, odd offsets", () => {
  const f = new Float32Array([1.5, -2, NaN]);
  assert.deepEqual(arr(toFloat32(new DataView(f.buffer))), [1.5, -2, null]);
  assert.deepEqual(arr(toFloat32(f.buffer)), [1.5, -2, null]);
  assert.deepEqual(arr(toFloat32(new Uint8Array(f.buffer))), [1.5, -2, null]);
  const odd = new Uint8Array(13);
  odd.set(new Uint8Array(f.buffer), 1);
  assert.deepEqual(arr(toFloat32(new DataView(odd.buffer, 1, 12))), [1.5, -2, null]);
  assert.equal(toFloat32(null), null);
});
