// The capture panel's pure data helpers: histograms, the report's tree with gradients beside
// forward values, columns, inline groups, the module toggles' tree.
import test from "node:test";
import assert from "node:assert/strict";
import {
  histPath,
  histRow,
  histTitle,
  inlineGroups,
  moduleTree,
  modulesSummary,
  prepareReport,
  rowLabel,
  visibleColumns,
  visibleItems,
} from "../src/capture/data.js";
import { EVIL, EVIL_CLASS, controls, forward, snap, withGrads } from "./capturefixtures.js";

// --- pure helpers -----------------------------------------------------------------------------

test("histRow reads [lo, hi, counts...] and rejects anything else", () => {
  assert.deepEqual(histRow([0, 1, 2, 0, 3]), { lo: 0, hi: 1, counts: [2, 0, 3], total: 5 });
  assert.equal(histRow(null), null);
  assert.equal(histRow([0, 1]), null);
  assert.deepEqual(histRow([null, null, -1, "x", 4]).counts, [0, 0, 4]);
});

test("histPath: one bar per non-empty bin, tallest = full height, a lone count still shows", () => {
  assert.equal(histPath([0, 0, 0], 60, 10), "");
  assert.equal(histPath([], 60, 10), "");
  const d = histPath([1, 0, 100, 0], 40, 10);
  const bars = d.match(/M[^z]*z/g);
  assert.equal(bars.length, 2);
  assert.equal(bars[0], "M0 10V9h9V10z"); // 1 of 100: the 1 px minimum
  assert.equal(bars[1], "M20 10V0h9V10z"); // the fullest bin fills the box
});

test("histTitle says how many values, the range and the fullest bin", () => {
  const t = histTitle(histRow([-2, 2, 2, 3, 2, 1]));
  assert.equal(t, "8 finite values in 4 bins\nrange -2 \u2026 2\nfullest bin -1 \u2026 0: 3");
  assert.equal(histTitle(null), "");
});

test("prepareReport puts each gradient next to its forward value, or in its own row under its module", () => {
  const p = prepareReport(withGrads());
  assert.equal(p.called, true);
  assert.deepEqual(Array.from(p.tree.rowPath), [`['${EVIL}']`, "b0.act", "b0.pert", "head.p2"]);
  assert.deepEqual(Array.from(p.grad.row), [-1, -1, 0, 1]);
  assert.deepEqual(Array.from(p.gradOnly), [0, 0, 0, 1]); // head.p2 has no forward value
  assert.equal(p.tree.nodeType[p.tree.rowParent[3]], "Linear"); // its module node came from the gradients
  assert.equal(p.tree.rowType[3], "Perturbation");
  assert.equal(p.tree.snap.stats.mean[3], null);
  assert.equal(p.hist[2], null);
  assert.equal(p.hist.length, 4);
  assert.equal(p.grad.hist[0].total, 8);
  const empty = prepareReport({});
  assert.equal(empty.called, false);
  assert.equal(empty.tree.R, 0);
  assert.equal(empty.grad, null);
});

test("a value sown once and perturbed under the same name shares its row with the gradient", () => {
  const rep = forward();
  rep.snapshot = snap({
    nodes: { parent: [-1, 0], key: ["b0", "h"], type: ["Block", ""] },
    rows: { parent: [1, 0], key: [0, "other"], type: [0, 0] },
    stats: {},
  });
  rep.grads = {
    snapshot: snap({
      nodes: { parent: [-1], key: ["b0"], type: ["Block"] },
      rows: { parent: [0], key: ["h"], type: [1] },
      stats: {},
    }),
    hist: { bins: 4, rows: [null] },
  };
  let p = prepareReport(rep);
  assert.deepEqual(Array.from(p.tree.rowPath), ["b0.h[0]", "b0.other"]);
  assert.deepEqual(Array.from(p.grad.row), [0, -1]);
  // Sown twice: which call's value the gradient belongs to is unclear, so it gets its own row.
  rep.snapshot.rows.parent.push(1);
  rep.snapshot.rows.key.push(1);
  for (const c of ["type", "shape", "dtype", "nbytes", "sharding", "devices", "metadata", "status"])
    rep.snapshot.rows[c].push(0);
  for (const c of Object.keys(rep.snapshot.stats)) rep.snapshot.stats[c].push(0);
  p = prepareReport(rep);
  assert.deepEqual(Array.from(p.tree.rowPath), ["b0.h[0]", "b0.other", "b0.h[1]", "b0.h"]);
  assert.deepEqual(Array.from(p.gradOnly), [0, 0, 0, 1]);
});

test("the shape column is as wide as the longest shape captured: an attention's (16, 20, 4, 16) whole", () => {
  const width = (r) => visibleColumns(prepareReport(r)).find((c) => c.id === "shape").width;
  assert.equal(width(forward()), 100); // "(2, 4)": the column's own width
  const heads = forward();
  heads.snapshot.rows.shape = [[16, 20, 64], [16, 20, 4, 16], [2]];
  const w = width(heads);
  assert.ok(w >= 16 + 15 * 7 && w <= 180, String(w)); // 15 characters of 11.5px monospace and the padding
  const huge = forward();
  huge.snapshot.rows.shape = [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], [2], [2]];
  assert.equal(width(huge), 180); // at most: a longer shape is cut, in full on hover
  assert.equal(visibleColumns(prepareReport(forward())).find((c) => c.id === "shape").width, 100);
});

test("visibleColumns: gradient columns only with gradients, NaN/Inf only when there are some", () => {
  const ids = (r) => visibleColumns(prepareReport(r)).map((c) => c.id);
  assert.deepEqual(ids(forward()), ["path", "type", "shape", "dtype", "mean", "std", "min", "max", "hist"]);
  assert.deepEqual(ids(withGrads()), [
    "path",
    "type",
    "shape",
    "dtype",
    "mean",
    "std",
    "min",
    "max",
    "hist",
    "gmean",
    "gstd",
    "gnorm",
    "gnonfinite",
    "ghist",
  ]);
});

/** Net{b0: Block{act: (x, y), linear: Linear{__call__: (z,)}}}, root sow (w,): what sown tuples look like. */
function tuples() {
  const rep = forward();
  rep.snapshot = snap({
    nodes: {
      parent: [-1, -1, 1, 1, 3],
      key: [EVIL, "b0", "act", "linear", "__call__"],
      type: ["", EVIL_CLASS, "", "Linear", ""],
    },
    rows: { parent: [0, 2, 2, 4], key: [0, 0, 1, 0], type: [0, 0, 0, 0] },
    stats: {},
  });
  rep.hist.rows = [null, null, null, null];
  return rep;
}

test("a sown tuple's group is drawn inline: one row per value, labelled act[0], at the group's depth", () => {
  const p = prepareReport(tuples());
  const t = p.tree;
  const inline = inlineGroups(t);
  assert.deepEqual(Array.from(inline), [1, 0, 1, 0, 1]);
  const items = visibleItems(t, new Uint8Array(t.N).fill(1), inline);
  const text = items.map((id) =>
    id < t.N
      ? `module ${t.nodePath[id]}`
      : `${t.rowPath[id - t.N]} as ${rowLabel(t, id - t.N, inline).label}@${rowLabel(t, id - t.N, inline).depth}`,
  );
  assert.deepEqual(text, [
    `['${EVIL}'][0] as ['${EVIL}'][0]@0`,
    "module b0",
    "b0.act[0] as act[0]@1",
    "b0.act[1] as act[1]@1",
    "module b0.linear",
    "b0.linear.__call__[0] as __call__[0]@2",
  ]);
  // Collapsing a module hides its values; an inline group cannot be collapsed away.
  const closed = new Uint8Array(t.N).fill(0);
  assert.deepEqual(
    visibleItems(t, closed, inline).map((id) => (id < t.N ? t.nodePath[id] : t.rowPath[id - t.N])),
    [`['${EVIL}'][0]`, "b0"],
  );
});

test("moduleTree: depth, tri-state over each subtree, summary", () => {
  const mods = controls().modules;
  let t = moduleTree(mods);
  assert.deepEqual(Array.from(t.depth), [0, 1, 2, 1]);
  assert.deepEqual(Array.from(t.checked), [1, 1, 1, 1]);
  assert.equal(modulesSummary(t), "all 4 modules");
  t = moduleTree(mods.map((m) => ({ ...m, on: m.path === "b0.linear" })));
  assert.deepEqual(Array.from(t.checked), [0, 0, 1, 0]);
  assert.deepEqual(Array.from(t.mixed), [1, 1, 0, 0]);
  assert.equal(modulesSummary(t), "1 of 4 modules");
  t = moduleTree(mods.map((m) => ({ ...m, on: false })));
  assert.equal(modulesSummary(t), "none of 4 modules");
  // A parent index that does not come first is treated as a root, not followed.
  t = moduleTree([
    { path: "a", parent: 1, on: true },
    { path: "b", parent: 0, on: true },
  ]);
  assert.deepEqual(Array.from(t.parent), [-1, 0]);
});
