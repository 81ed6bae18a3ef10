import test from "node:test";
import assert from "node:assert/strict";
import {
  buildTree,
  flatten,
  defaultExpanded,
  remapExpanded,
  filterRows,
  sortKids,
  itemPath,
  itemDepth,
  ancestors,
  rowSortValue,
  modulesWithMatches,
} from "../src/shared/tree.js";
import { sequential, tricky } from "./fixtures.js";

const paths = (tree, items) => items.map((id) => itemPath(tree, id));
const all = (tree) => new Uint8Array(tree.N).fill(1);

test("paths and depths from parent links", () => {
  const t = buildTree(sequential());
  assert.deepEqual(t.nodePath, ["layers", "layers[0]", "layers[1]"]);
  assert.deepEqual(t.rowPath, [
    "layers[0].bias",
    "layers[0].kernel",
    "layers[1].bias",
    "layers[1].mean",
    "layers[1].scale",
    "layers[1].var",
  ]);
  assert.deepEqual([...t.nodeDepth], [0, 1, 1]);
  assert.deepEqual([...t.rowDepth], [2, 2, 2, 2, 2, 2]);
  assert.equal(itemDepth(t, t.N + 1), 2);
  assert.deepEqual(ancestors(t, t.N + 1), [1, 0]);
});

test("tricky keys: dict keys quoted, root Variable, empty module", () => {
  const t = buildTree(tricky());
  assert.deepEqual(t.rowPath, [
    "blocks[0].w",
    "blocks[0].attn.q",
    "blocks[1].w",
    "blocks[1].attn.q",
    "d['<script>']",
    "d['a b']",
    "step",
  ]);
  assert.deepEqual(t.rowType, ["Param", "Param", "Param", "Param", "Custom", "Custom", "Variable"]);
});

test("aggregates: count, bytes, elements, NaN/Inf of the Variables under each module", () => {
  const t = buildTree(sequential());
  assert.deepEqual([...t.nodeCount], [6, 2, 4]);
  assert.deepEqual([...t.nodeBytes], [84, 36, 48]);
  assert.deepEqual([...t.nodeSize], [21, 9, 12]);
  const u = buildTree(tricky());
  assert.equal(u.nodeCount[0], 4); // blocks
  assert.equal(u.nodeBytes[0], 64 + 16 + 128 + 8);
  assert.equal(u.nodeNonfinite[0], 8); // 2 NaN + 1 Inf + 5 Inf
  assert.equal(u.nodeNonfinite[3], 8 - 3 + 3); // blocks[1]: w (3) + attn.q (5)
  assert.equal(u.nodeCount[6], 0); // empty
});

test("child order follows the rows; empty modules last", () => {
  const t = buildTree(tricky());
  const items = flatten(t, all(t));
  assert.deepEqual(paths(t, items), [
    "blocks",
    "blocks[0]",
    "blocks[0].w",
    "blocks[0].attn",
    "blocks[0].attn.q",
    "blocks[1]",
    "blocks[1].w",
    "blocks[1].attn",
    "blocks[1].attn.q",
    "d",
    "d['<script>']",
    "d['a b']",
    "step",
    "empty",
  ]);
});

test("flatten with expand/collapse", () => {
  const t = buildTree(tricky());
  const e = new Uint8Array(t.N); // all collapsed
  assert.deepEqual(paths(t, flatten(t, e)), ["blocks", "d", "step", "empty"]);
  e[0] = 1; // blocks
  assert.deepEqual(paths(t, flatten(t, e)), ["blocks", "blocks[0]", "blocks[1]", "d", "step", "empty"]);
  e[3] = 1; // blocks[1]
  assert.deepEqual(paths(t, flatten(t, e)), [
    "blocks",
    "blocks[0]",
    "blocks[1]",
    "blocks[1].w",
    "blocks[1].attn",
    "d",
    "step",
    "empty",
  ]);
  e[0] = 0; // collapsing a parent hides its open children too
  assert.deepEqual(paths(t, flatten(t, e)), ["blocks", "d", "step", "empty"]);
});

test("default expansion: everything when small, top level only when large", () => {
  const t = buildTree(tricky());
  assert.deepEqual([...defaultExpanded(t)], [1, 1, 1, 1, 1, 1, 1]);
  assert.deepEqual([...defaultExpanded(t, 3)], [1, 0, 0, 0, 0, 1, 1]);
});

test("expansion carries over a structure change by module path", () => {
  const a = buildTree(tricky());
  const ea = defaultExpanded(a, 3);
  ea[3] = 1; // blocks[1]
  const snap = tricky();
  snap.structure = 10;
  // Drop blocks[0] entirely: nodes shift.
  snap.nodes = {
    parent: [-1, 0, 1, -1, -1],
    key: ["blocks", 1, "attn", "d", "empty"],
    type: ["List", "Block", "Attention", "Dict", "Dropout"],
  };
  snap.rows = { ...snap.rows, parent: [1, 2, 3, 3, -1], key: ["w", "q", "<script>", "a b", "step"] };
  for (const k of ["type", "shape", "dtype", "nbytes", "sharding", "devices", "metadata", "status", "note"])
    snap.rows[k] = snap.rows[k].slice(2);
  for (const k of Object.keys(snap.stats)) snap.stats[k] = snap.stats[k].slice(2);
  const b = buildTree(snap, a);
  assert.notEqual(b.shape, a.shape);
  assert.deepEqual(b.nodePath, ["blocks", "blocks[1]", "blocks[1].attn", "d", "empty"]);
  assert.deepEqual([...remapExpanded(a, ea, b, 3)], [1, 1, 0, 1, 1]);
});

test("same structure reuses paths, recomputes aggregates", () => {
  const a = buildTree(tricky());
  const snap = tricky();
  snap.refresh = 4;
  snap.stats.nan_count[2] = 0;
  snap.stats.inf_count[2] = 0;
  const b = buildTree(snap, a);
  assert.equal(b.shape, a.shape);
  assert.equal(b.nodeNonfinite[0], 5);
});

test("filter: case-insensitive substring, ancestors kept", () => {
  const t = buildTree(tricky());
  const m = filterRows(t, "ATTN");
  assert.deepEqual([...m], [0, 1, 0, 1, 0, 0, 0]);
  assert.deepEqual([...modulesWithMatches(t, m)], [1, 1, 1, 1, 1, 0, 0]);
  assert.deepEqual(paths(t, flatten(t, all(t), t.kids, m)), [
    "blocks",
    "blocks[0]",
    "blocks[0].attn",
    "blocks[0].attn.q",
    "blocks[1]",
    "blocks[1].attn",
    "blocks[1].attn.q",
  ]);
  assert.deepEqual(paths(t, flatten(t, all(t), t.kids, filterRows(t, "<SCRIPT"))), ["d", "d['<script>']"]);
  assert.deepEqual(paths(t, flatten(t, all(t), t.kids, filterRows(t, "nothing"))), []);
  assert.equal(filterRows(t, "  "), null);
});

test("filter by type, alone and with text", () => {
  const t = buildTree(tricky());
  assert.deepEqual(paths(t, flatten(t, all(t), t.kids, filterRows(t, "", "Custom"))), [
    "d",
    "d['<script>']",
    "d['a b']",
  ]);
  assert.deepEqual(paths(t, flatten(t, all(t), t.kids, filterRows(t, "a b", "Custom"))), ["d", "d['a b']"]);
  assert.deepEqual(paths(t, flatten(t, all(t), t.kids, filterRows(t, "", "Variable"))), ["step"]);
});

test("sort: Variables within a module, nulls last both ways", () => {
  const t = buildTree(sequential());
  const asc = sortKids(t, "norm", "asc");
  assert.deepEqual(paths(t, flatten(t, all(t), asc)), [
    "layers",
    "layers[0]",
    "layers[0].bias",
    "layers[0].kernel",
    "layers[1]",
    "layers[1].bias",
    "layers[1].mean",
    "layers[1].scale",
    "layers[1].var",
  ]);
  const desc = sortKids(t, "norm", "desc");
  assert.deepEqual(paths(t, flatten(t, all(t), desc)), [
    "layers",
    "layers[0]",
    "layers[0].kernel",
    "layers[0].bias",
    "layers[1]",
    "layers[1].scale",
    "layers[1].var",
    "layers[1].bias",
    "layers[1].mean",
  ]);
  const u = buildTree(tricky());
  const m = sortKids(u, "mean", "desc");
  const mp = paths(u, flatten(u, all(u), m));
  // d['a b'] has no mean: last in d, ascending or descending.
  assert.deepEqual(mp.slice(mp.indexOf("d"), mp.indexOf("d") + 3), ["d", "d['<script>']", "d['a b']"]);
  const ma = paths(u, flatten(u, all(u), sortKids(u, "mean", "asc")));
  assert.deepEqual(ma.slice(ma.indexOf("d"), ma.indexOf("d") + 3), ["d", "d['<script>']", "d['a b']"]);
  // Root: Variables first, then modules in their order.
  assert.deepEqual(u.kids[0].length, 4);
  assert.deepEqual(
    m[0].map((id) => itemPath(u, id)),
    ["step", "blocks", "d", "empty"],
  );
});

test("sort by bytes orders modules by their aggregate too", () => {
  const u = buildTree(tricky());
  const k = sortKids(u, "bytes", "desc");
  assert.deepEqual(
    k[0].map((id) => itemPath(u, id)),
    ["blocks", "d", "step", "empty"],
  );
  const blocks = k[1].map((id) => itemPath(u, id));
  assert.deepEqual(blocks, ["blocks[1]", "blocks[0]"]); // 136 > 80
  const a = sortKids(u, "bytes", "asc");
  assert.deepEqual(
    a[0].map((id) => itemPath(u, id)),
    ["empty", "step", "d", "blocks"],
  );
});

test("sort off returns the payload order", () => {
  const u = buildTree(tricky());
  assert.equal(sortKids(u, null, null), u.kids);
  assert.equal(sortKids(u, "norm", null), u.kids);
});

test("sort values per column", () => {
  const u = buildTree(tricky());
  assert.equal(rowSortValue(u, 0, "shape"), 16);
  assert.equal(rowSortValue(u, 6, "dtype"), "int32");
  assert.equal(rowSortValue(u, 2, "place"), "PartitionSpec('data',)");
  assert.equal(rowSortValue(u, 0, "place"), "cpu:0");
  assert.equal(rowSortValue(u, 2, "nonfinite"), 3);
  assert.equal(rowSortValue(u, 5, "nonfinite"), null);
  assert.equal(rowSortValue(u, 5, "status"), "abstract");
  assert.equal(rowSortValue(u, 0, "status"), "");
  assert.equal(rowSortValue(u, 5, "mean"), null);
});

test("empty and malformed payloads do not throw", () => {
  const t = buildTree({});
  assert.equal(t.N, 0);
  assert.deepEqual(flatten(t, new Uint8Array(0)), []);
  const bad = sequential();
  bad.nodes.parent = [5, 0, 0]; // out of range -> root
  const b = buildTree(bad);
  assert.equal(b.nodePath[0], "layers");
  const cyc = sequential();
  cyc.nodes.parent = [1, 0, 0]; // a cycle
  const c = buildTree(cyc);
  assert.equal(flatten(c, all(c)).length, 9);
});
