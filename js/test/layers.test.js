// Stacked layers: the tree lists a stacked Variable's layers under its row (closed at first), the
// viewer toggles them and draws the layer × refresh heatmap from their history.
import test from "node:test";
import assert from "node:assert/strict";
import { buildTree, filterRows, flatten, itemPath } from "../src/shared/tree.js";
import { layerLinks } from "../src/shared/layers.js";
import { RowState } from "../src/viewer/rows.js";
import { cellSize, heatColor, heatGrid } from "../src/viewer/heatmap.js";
import { History } from "../src/shared/ring.js";
import { FakeDocument, FakeModel } from "./fakedom.js";
import { stacked, stackedStatic } from "./fixtures.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);
const tick = (ms = 10) => new Promise((r) => setTimeout(r, ms));
const { default: widget } = await import("../src/viewer.js");

const all = (tree) => new Uint8Array(tree.N).fill(1);
const paths = (tree, items) => items.map((id) => itemPath(tree, id));

test("layer rows: paths as Python writes them, one level under their Variable, not counted twice", () => {
  const t = buildTree(stacked());
  assert.deepEqual(t.rowPath.slice(0, 4), [
    "blocks.bias",
    "blocks.bias[layer 0]",
    "blocks.bias[layer 1]",
    "blocks.bias[layer 2]",
  ]);
  for (const p of t.rowPath) assert.ok(p in stackedStatic().rows, p); // the same text as the saved table
  assert.deepEqual([...t.layerKids.keys()], [0, 4]);
  assert.equal(t.rowDepth[1], t.rowDepth[0] + 1);
  assert.deepEqual([...t.rowLayer.slice(4, 8)], [-1, 0, 1, 2]);
  assert.equal(t.nodeCount[0], 2); // blocks: bias and kernel, not their layers
  assert.equal(t.nodeBytes[0], stacked().rows.nbytes[0] + stacked().rows.nbytes[4]);
});

test("closed groups list the Variable alone; an open one lists its layers after it", () => {
  const t = buildTree(stacked());
  const open = new Uint8Array(t.R);
  assert.deepEqual(paths(t, flatten(t, all(t), t.kids, null, open)), [
    "blocks",
    "blocks.bias",
    "blocks.kernel",
    "head",
    "head.bias",
    "head.kernel",
  ]);
  open[4] = 1;
  assert.deepEqual(paths(t, flatten(t, all(t), t.kids, null, open)), [
    "blocks",
    "blocks.bias",
    "blocks.kernel",
    "blocks.kernel[layer 0]",
    "blocks.kernel[layer 1]",
    "blocks.kernel[layer 2]",
    "head",
    "head.bias",
    "head.kernel",
  ]);
});

test("a filter matching a layer keeps its Variable listed", () => {
  const t = buildTree(stacked());
  const open = new Uint8Array(t.R).fill(1);
  const match = filterRows(t, "layer 1");
  assert.deepEqual(paths(t, flatten(t, all(t), t.kids, match, open)), [
    "blocks",
    "blocks.bias",
    "blocks.bias[layer 1]",
    "blocks.kernel",
    "blocks.kernel[layer 1]",
  ]);
});

test("malformed layer links are ignored", () => {
  const rowPath = ["a", "b", "c", "d"];
  const lower = rowPath.map((p) => p.toLowerCase());
  const depth = new Int32Array(4);
  const { rowLayerOf, layerKids } = layerLinks(
    { layer_of: [null, 0, 1, 9], layer: [null, 0, 0, 0] },
    4,
    2,
    rowPath,
    lower,
    depth,
  );
  assert.deepEqual([...rowLayerOf], [-1, 0, -1, -1]); // a layer of a layer, an index out of range: plain rows
  assert.deepEqual([...layerKids.get(0)], [3]);
  assert.equal(rowPath[1], "a[layer 0]");
  assert.deepEqual(layerLinks({ layer_of: "x" }, 4, 2, rowPath, lower, depth).layerKids.size, 0);
});

test("RowState: toggling a group, revealing a layer opens its group, the open groups survive a new snapshot", () => {
  const rows = new RowState();
  rows.setSnapshot(stacked());
  const N = rows.tree.N;
  assert.equal(rows.toggle(N + 4), true);
  assert.equal(rows.toggle(N + 8), false); // head.bias: no layers
  assert.ok(paths(rows.tree, rows.layout().items).includes("blocks.kernel[layer 2]"));
  rows.setSnapshot(stacked({ structure: 99 }));
  assert.equal(rows.openRows[4], 1);
  rows.toggle(N + 4);
  assert.equal(rows.reveal(2), N + 2);
  assert.equal(rows.openRows[0], 1);
});

test("heatmap grid: one row per layer, the newest refresh last, range over finite values", () => {
  const t = buildTree(stacked());
  const h = new History("mean");
  const snap = stacked();
  h.onSnapshot(snap);
  const mean = snap.stats.mean;
  h.onSnapshot({ ...snap, refresh: 99, stats: { ...snap.stats, mean: mean.map((v, i) => (i === 6 ? NaN : v + 1)) } });
  const g = heatGrid(t, h, 4);
  assert.equal(g.L, 3);
  assert.equal(g.T, 2);
  assert.deepEqual(g.layers, [0, 1, 2]);
  assert.ok(Math.abs(g.values[0] - mean[5]) < 1e-6 && Math.abs(g.values[1] - (mean[5] + 1)) < 1e-5);
  assert.ok(Number.isNaN(g.values[1 * 2 + 1]) && !Number.isNaN(g.values[2])); // layer 1 had no value at the last refresh
  const finite = [mean[5], mean[6], mean[7], mean[5] + 1, mean[7] + 1];
  assert.ok(Math.abs(g.lo - Math.min(...finite)) < 1e-5 && Math.abs(g.hi - Math.max(...finite)) < 1e-5);
  assert.equal(heatColor(NaN, 0, 1), "#d9d9d9");
  assert.equal(heatColor(0, 0, 1), "rgb(68,1,84)");
  assert.equal(heatColor(1, 0, 1), "rgb(253,231,37)");
  assert.equal(heatColor(5, 5, 5), heatColor(0.5, 0, 1));
  assert.deepEqual(cellSize(24, 100), { w: 5, h: 12 });
});

function mount(snapshot) {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const model = new FakeModel({ snapshot, status: { state: "live", refreshes: 1 }, sparkline_stat: "mean" });
  const cleanup = widget.render({ model, el });
  const q = (sel) => el.querySelectorAll(sel);
  const row = (path) => q("tr[data-path]").find((t) => t.getAttribute("data-path") === path);
  const listed = () => q("tr[data-path]").map((t) => t.getAttribute("data-path"));
  return { el, model, q, row, listed, cleanup };
}

test("viewer: a group row with its layers closed, a click opens them, its button opens the heatmap", async () => {
  const { q, row, listed, model, cleanup } = mount(stacked());
  await tick();
  assert.equal(q("tr.nnx-group").length, 2);
  const kernel = row("blocks.kernel");
  assert.equal(kernel.getAttribute("aria-expanded"), "false");
  assert.ok(!listed().includes("blocks.kernel[layer 0]"));
  kernel.dispatch("click");
  await tick();
  assert.ok(listed().includes("blocks.kernel[layer 2]"));
  assert.equal(row("blocks.kernel[layer 1]").querySelectorAll("td.c-path")[0].textContent, "layer 1");
  assert.equal(q("div.nnx-heatmap")[0].hidden, true);
  row("blocks.kernel").querySelectorAll("button.nnx-heat")[0].dispatch("click");
  await tick();
  const hm = q("div.nnx-heatmap")[0];
  assert.equal(hm.hidden, false);
  assert.equal(hm.querySelectorAll("rect").length, 3); // 3 layers × 1 refresh
  assert.equal(hm.querySelectorAll("span.hm-title")[0].textContent, "blocks.kernel");
  const rect = hm.querySelectorAll("rect")[2];
  assert.match(rect.querySelectorAll("title")[0].textContent, /^layer 2 · latest refresh · mean /);
  rect.dispatch("mouseover");
  assert.match(hm.querySelectorAll("div.hm-readout")[0].textContent, /^layer 2 · latest refresh · mean -?\d/);
  assert.equal(row("blocks.kernel").getAttribute("aria-expanded"), "true"); // the button does not toggle
  // a refresh adds a column
  const snap = stacked();
  model.set("snapshot", { ...snap, refresh: 7, stats: { ...snap.stats } });
  model.emit("change:snapshot");
  await tick(30);
  assert.equal(hm.querySelectorAll("rect").length, 6);
  hm.querySelectorAll("button.hm-close")[0].dispatch("click");
  assert.equal(hm.hidden, true);
  cleanup();
});

test("capture report: a stacked value's layers are always listed under it, labelled by layer", async () => {
  const { prepareReport, visibleItems, inlineGroups, rowLabel } = await import("../src/capture/data.js");
  const prep = prepareReport({
    snapshot: stacked(),
    hist: { bins: 4, rows: [] },
    messages: [],
    types: ["Intermediate"],
  });
  const t = prep.tree;
  const inline = inlineGroups(t);
  const items = visibleItems(t, new Uint8Array(t.N).fill(1), inline);
  assert.deepEqual(
    paths(t, items).filter((p) => p.startsWith("blocks.kernel")),
    ["blocks.kernel", "blocks.kernel[layer 0]", "blocks.kernel[layer 1]", "blocks.kernel[layer 2]"],
  );
  const kernel = t.rowPath.indexOf("blocks.kernel");
  assert.deepEqual(rowLabel(t, kernel + 2, inline), { label: "layer 1", depth: rowLabel(t, kernel, inline).depth + 1 });
});
