// The capture panel: its pure data helpers, and the widget rendered into a fake DOM with a fake
// anywidget model (toggles become custom messages; the report becomes rows with histograms).
import test from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";
import {
  histPath, histRow, histTitle, inlineGroups, moduleTree, modulesSummary, prepareReport, rowLabel, visibleColumns,
  visibleItems,
} from "../src/capture/data.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);

const { default: widget } = await import("../src/capture.js");

const EVIL = "<img src=x onerror=alert(1)>";
const EVIL_CLASS = "Evil<script>alert(2)</script>";

// --- payloads ---------------------------------------------------------------------------------

function snap({ nodes, rows, stats, tables }) {
  const n = rows.parent.length;
  const fill = (v) => new Array(n).fill(v);
  return {
    version: 1, root_type: "State",
    nodes,
    rows: { shape: fill([2, 4]), dtype: fill(0), nbytes: fill(32), sharding: fill(-1), devices: fill(0),
            metadata: fill(-1), status: fill(0), ...rows },
    stats: { mean: fill(0.5), std: fill(1), min: fill(-1), max: fill(2), norm: fill(3), abs_max: fill(2),
             nan_count: fill(0), inf_count: fill(0), zero_frac: fill(0), ...stats },
    tables: { type: ["Intermediate", "Perturbation"], dtype: ["float32"], sharding: [], devices: ["cpu:0"],
              metadata: [], status: ["ok"], ...tables },
    totals: {}, devices: { platform: "cpu", count: 1, devices: [] },
  };
}

/** What a call of Net(b0: Block(linear), head) captured: b0.act, b0.pert, a root sow with an XSS key. */
function forward() {
  return {
    snapshot: snap({
      nodes: { parent: [-1], key: ["b0"], type: [EVIL_CLASS] },
      rows: { parent: [-1, 0, 0], key: [EVIL, "act", "pert"], type: [0, 0, 1] },
      stats: { mean: [0.25, -0.5, 0] },
    }),
    hist: { bins: 4, rows: [[0, 1, 1, 0, 0, 5], [-2, 2, 2, 3, 2, 1], null] },
    grads: null,
    messages: [],
    types: ["Intermediate"],
    seen: ["Intermediate", "Perturbation"],
  };
}

function withGrads() {
  return {
    ...forward(),
    grads: {
      snapshot: snap({
        nodes: { parent: [-1, -1], key: ["b0", "head"], type: ["Block", "Linear"] },
        rows: { parent: [0, 1], key: ["pert", "p2"], type: [1, 1] },
        stats: { mean: [0.125, 7], std: [0.5, 0], norm: [1.5, 2], nan_count: [0, 1] },
      }),
      hist: { bins: 4, rows: [[-1, 1, 0, 4, 4, 0], null] },
    },
  };
}

function controls(extra = {}) {
  return {
    rev: 1,
    types: [
      { name: "Intermediate", on: true, title: "nnx.Intermediate" },
      { name: "Perturbation", on: false, title: "nnx.Perturbation" },
      { name: EVIL, on: false, title: EVIL },
    ],
    methods: false,
    modules: [
      { path: "", key: "", parent: -1, cls: "Net", on: true },
      { path: "b0", key: "b0", parent: 0, cls: EVIL_CLASS, on: true },
      { path: "b0.linear", key: "linear", parent: 1, cls: "Linear", on: true },
      { path: "head", key: "head", parent: 0, cls: "Linear", on: true },
    ],
    pending: false,
    ...extra,
  };
}

function mount(report = forward(), extra = {}) {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const model = new FakeModel({
    controls: controls(), report,
    status: { target: "Net", calls: 1, kind: "call", elapsed_ms: 3.5, message: "", level: "" },
    ...extra,
  });
  const cleanup = widget.render({ model, el });
  const q = (sel) => el.querySelectorAll(sel);
  const paths = () => q("tr.nnx-capture-row").map((t) => t.getAttribute("data-path"));
  const row = (path) => q("tr.nnx-capture-row").find((t) => t.getAttribute("data-path") === path);
  const input = (attr, v) => q(`input[${attr}]`).find((i) => i.getAttribute(attr) === v);
  return { doc, el, model, cleanup, q, paths, row, input };
}

function click(input) {
  input.checked = !input.checked;
  input.indeterminate = false;
  input.dispatch("change");
}

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
    rows: { parent: [1, 0], key: [0, "other"], type: [0, 0] }, stats: {},
  });
  rep.grads = {
    snapshot: snap({ nodes: { parent: [-1], key: ["b0"], type: ["Block"] }, rows: { parent: [0], key: ["h"], type: [1] }, stats: {} }),
    hist: { bins: 4, rows: [null] },
  };
  let p = prepareReport(rep);
  assert.deepEqual(Array.from(p.tree.rowPath), ["b0.h[0]", "b0.other"]);
  assert.deepEqual(Array.from(p.grad.row), [0, -1]);
  // Sown twice: which call's value the gradient belongs to is unclear, so it gets its own row.
  rep.snapshot.rows.parent.push(1);
  rep.snapshot.rows.key.push(1);
  for (const c of ["type", "shape", "dtype", "nbytes", "sharding", "devices", "metadata", "status"]) rep.snapshot.rows[c].push(0);
  for (const c of Object.keys(rep.snapshot.stats)) rep.snapshot.stats[c].push(0);
  p = prepareReport(rep);
  assert.deepEqual(Array.from(p.tree.rowPath), ["b0.h[0]", "b0.other", "b0.h[1]", "b0.h"]);
  assert.deepEqual(Array.from(p.gradOnly), [0, 0, 0, 1]);
});

test("visibleColumns: gradient columns only with gradients, NaN/Inf only when there are some", () => {
  const ids = (r) => visibleColumns(prepareReport(r)).map((c) => c.id);
  assert.deepEqual(ids(forward()), ["path", "type", "shape", "dtype", "mean", "std", "min", "max", "hist"]);
  assert.deepEqual(ids(withGrads()),
    ["path", "type", "shape", "mean", "std", "hist", "gmean", "gstd", "gnorm", "gnonfinite", "ghist"]);
});

/** Net{b0: Block{act: (x, y), linear: Linear{__call__: (z,)}}}, root sow (w,): what sown tuples look like. */
function tuples() {
  const rep = forward();
  rep.snapshot = snap({
    nodes: { parent: [-1, -1, 1, 1, 3], key: [EVIL, "b0", "act", "linear", "__call__"], type: ["", EVIL_CLASS, "", "Linear", ""] },
    rows: { parent: [0, 2, 2, 4], key: [0, 0, 1, 0], type: [0, 0, 0, 0] }, stats: {},
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
  const text = items.map((id) => (id < t.N ? `module ${t.nodePath[id]}` : `${t.rowPath[id - t.N]} as ${rowLabel(t, id - t.N, inline).label}@${rowLabel(t, id - t.N, inline).depth}`));
  assert.deepEqual(text, [
    `['${EVIL}'][0] as ['${EVIL}'][0]@0`,
    "module b0", "b0.act[0] as act[0]@1", "b0.act[1] as act[1]@1",
    "module b0.linear", "b0.linear.__call__[0] as __call__[0]@2",
  ]);
  // Collapsing a module hides its values; an inline group cannot be collapsed away.
  const closed = new Uint8Array(t.N).fill(0);
  assert.deepEqual(visibleItems(t, closed, inline).map((id) => (id < t.N ? t.nodePath[id] : t.rowPath[id - t.N])),
    [`['${EVIL}'][0]`, "b0"]);
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
  t = moduleTree([{ path: "a", parent: 1, on: true }, { path: "b", parent: 0, on: true }]);
  assert.deepEqual(Array.from(t.parent), [-1, 0]);
});

// --- the widget -------------------------------------------------------------------------------

test("rows per captured value with stats and a histogram; modules as group rows", () => {
  const { el, q, paths, row, cleanup } = mount();
  assert.equal(el.children[0].getAttribute("class"), "nnx-lab-capture");
  assert.deepEqual(paths(), [`['${EVIL}']`, "b0.act", "b0.pert"]);
  assert.equal(q("tr.nnx-capture-module").length, 1);
  const act = row("b0.act");
  const cell = (c) => act.querySelector(`td.c-${c}`).textContent;
  assert.equal(cell("path"), "act");
  assert.equal(cell("type"), "Intermediate");
  assert.equal(cell("shape"), "(2, 4)");
  assert.equal(cell("dtype"), "float32");
  assert.equal(cell("mean"), "-0.5");
  assert.equal(cell("max"), "2");
  const hist = act.querySelectorAll("svg.nnx-capture-hist");
  assert.equal(hist.length, 1);
  assert.equal(hist[0].querySelectorAll("path").length, 1);
  assert.equal(hist[0].querySelector("path").getAttribute("d").match(/z/g).length, 4);
  assert.ok(act.querySelector("td.c-hist").getAttribute("title").startsWith("8 finite values"));
  // No histogram for a value without one.
  assert.equal(row("b0.pert").querySelectorAll(".nnx-capture-hist").length, 0);
  assert.equal(q("th[data-col=gmean]").length, 0);
  const head = q(".nnx-capture-head")[0].textContent;
  assert.ok(head.includes("capture \u00B7 Net") && head.includes("1 call") && head.includes("3 values captured"), head);
  cleanup();
});

test("user strings are text: an XSS sow key, class name and type name stay inert", () => {
  const { doc, el, q, row, cleanup } = mount();
  const evil = row(`['${EVIL}']`);
  assert.equal(evil.querySelector("td.c-path").textContent, `['${EVIL}']`);
  assert.ok(q("tr.nnx-capture-module")[0].textContent.includes(EVIL_CLASS));
  assert.ok(q("label.nnx-capture-module").some((l) => l.textContent.includes(EVIL_CLASS)));
  assert.ok(q("label.nnx-capture-toggle").some((l) => l.textContent === EVIL));
  // Nothing was parsed as HTML: every element was made by createElement(NS) with a known tag.
  const tags = new Set(doc.calls.filter((c) => c[0] !== "createTextNode" && c[0] !== "textContent").map((c) => c.at(-1)));
  for (const t of tags) assert.match(t, /^(div|span|style|label|input|details|summary|button|ul|li|table|colgroup|col|thead|tbody|tr|th|td|svg|path|line)$/, t);
  assert.equal(el.querySelectorAll("img").length + el.querySelectorAll("script").length, 0);
  cleanup();
});

test("toggles send validated-by-Python messages: types, methods, modules, all/none", () => {
  const { model, input, q, cleanup } = mount();
  const pert = input("data-type", "Perturbation");
  assert.equal(pert.checked, false);
  assert.equal(input("data-type", "Intermediate").checked, true);
  click(pert);
  const methods = q("input.nnx-capture-methods")[0];
  assert.equal(methods.checked, false);
  click(methods);
  click(input("data-module", "b0"));
  q("button.nnx-capture-none")[0].dispatch("click");
  q("button.nnx-capture-all")[0].dispatch("click");
  assert.deepEqual(model.sent.map(({ id, ...m }) => m), [
    { type: "type", name: "Perturbation", on: true },
    { type: "methods", on: true },
    { type: "module", path: "b0", on: false },
    { type: "modules", on: false },
    { type: "modules", on: true },
  ]);
  const ids = model.sent.map((m) => m.id);
  assert.ok(ids.every((id, i) => Number.isInteger(id) && (i === 0 || id > ids[i - 1])), String(ids));
  cleanup();
});

test("a toggle says it waits for the kernel, or is queued during a busy cell, until the kernel applies it", () => {
  const { model, q, cleanup } = mount();
  const pending = q(".nnx-capture-pending")[0];
  assert.equal(pending.hidden, true);
  click(q("input.nnx-capture-methods")[0]);
  click(q("input.nnx-capture-methods")[0]);
  const [first, second] = model.sent.map((m) => m.id);
  assert.equal(pending.hidden, false);
  assert.equal(pending.getAttribute("data-state"), "pending");
  assert.ok(pending.textContent.includes("waiting for the kernel"));
  model.emit("msg:custom", { type: "ack", id: second + 1000, state: "queued" }); // not ours
  assert.equal(pending.getAttribute("data-state"), "pending");
  model.emit("msg:custom", { type: "ack", id: first, state: "queued" }); // routed to the nnx_lab subshell
  assert.equal(pending.getAttribute("data-state"), "queued");
  assert.ok(pending.textContent.includes("next call"));
  model.set("controls", controls({ rev: 2, methods: true, answered: first })); // the second is still open
  assert.equal(pending.getAttribute("data-state"), "pending");
  model.set("controls", controls({ rev: 3, methods: false, answered: second }));
  assert.equal(pending.hidden, true);
  assert.equal(pending.textContent, "");
  model.set("controls", controls({ rev: 4, methods: true, pending: true })); // changed from Python since the call
  assert.equal(pending.getAttribute("data-state"), "changed");
  assert.ok(pending.textContent.includes("apply from the next call"));
  cleanup();
});

test("the controls follow Python's answer: a rejected click is undone, tri-state modules", () => {
  const { model, input, q, cleanup } = mount();
  const inter = input("data-type", "Intermediate");
  click(inter); // Python refuses to turn off the last type, and re-sends the same controls
  assert.equal(inter.checked, false);
  model.set("controls", controls({ rev: 2, answered: model.sent.at(-1).id }));
  assert.equal(input("data-type", "Intermediate").checked, true);

  const mods = controls().modules.map((m) => ({ ...m, on: m.path !== "b0.linear" }));
  model.set("controls", controls({ rev: 3, modules: mods, methods: true, pending: true }));
  assert.equal(input("data-module", "b0.linear").checked, false);
  assert.equal(input("data-module", "b0").indeterminate, true);
  assert.equal(input("data-module", "").indeterminate, true);
  assert.equal(input("data-module", "head").checked, true);
  assert.equal(q("input.nnx-capture-methods")[0].checked, true);
  assert.ok(q("details.nnx-capture-modules")[0].querySelector("summary").textContent.includes("3 of 4 modules"));
  const pending = q(".nnx-capture-pending")[0];
  assert.equal(pending.hidden, false);
  assert.ok(pending.textContent.includes("next call"));
  cleanup();
});

test("a new report after a call with method outputs brings new rows; collapsing a module hides its rows", () => {
  const { model, q, paths, cleanup } = mount();
  const next = forward();
  next.snapshot.rows.parent.push(0, -1);
  next.snapshot.rows.key.push("__call__", "__call__");
  for (const c of ["type", "shape", "dtype", "nbytes", "sharding", "devices", "metadata", "status"]) {
    next.snapshot.rows[c].push(next.snapshot.rows[c][0], next.snapshot.rows[c][0]);
  }
  for (const c of Object.keys(next.snapshot.stats)) next.snapshot.stats[c].push(1, 1);
  next.hist.rows.push([0, 1, 1, 1, 1, 1], [0, 1, 4, 0, 0, 0]);
  model.set("report", next);
  assert.deepEqual(paths(), [`['${EVIL}']`, "b0.act", "b0.pert", "b0.__call__", "__call__"]);
  assert.equal(q("svg.nnx-capture-hist").length, 4);
  q("tr.nnx-capture-module")[0].querySelector("td.c-path").dispatch("click");
  assert.deepEqual(paths(), [`['${EVIL}']`, "__call__"]);
  // The collapsed module stays collapsed across the next report.
  model.set("report", { ...next });
  assert.deepEqual(paths(), [`['${EVIL}']`, "__call__"]);
  cleanup();
});

test("gradients sit next to forward values; a gradient without a forward value gets its own row", () => {
  const { q, paths, row, cleanup } = mount(withGrads(), {
    status: { target: "Net", calls: 2, kind: "grads", loss: 0.3333333, elapsed_ms: 12, message: "", level: "" },
  });
  assert.deepEqual(paths(), [`['${EVIL}']`, "b0.act", "b0.pert", "head.p2"]);
  const pert = row("b0.pert");
  assert.equal(pert.querySelector("td.c-gmean").textContent, "0.125");
  assert.equal(pert.querySelector("td.c-gnorm").textContent, "1.5");
  assert.equal(pert.querySelector("td.c-ghist").querySelectorAll("svg.nnx-capture-hist").length, 1);
  assert.equal(row("b0.act").querySelector("td.c-gmean").textContent, "");
  assert.ok(row("b0.act").querySelector("td.c-gmean").getAttribute("title").includes("not perturbed"));
  const extra = row("head.p2");
  assert.ok(extra.classList.contains("grad-only"));
  assert.equal(extra.querySelector("td.c-gmean").textContent, "7");
  assert.equal(extra.querySelector("td.c-gnonfinite").textContent, "1 NaN");
  assert.ok(extra.querySelector("td.c-gnonfinite").classList.contains("bad"));
  assert.equal(extra.querySelector("td.c-mean").textContent, "");
  assert.equal(q("th.grad").length, 5);
  const head = q(".nnx-capture-head")[0].textContent;
  assert.ok(head.includes("loss 0.3333") && head.includes("2 gradients"), head);
  cleanup();
});

test("the report variant (%%nnx_capture) draws the same table with gradients beside values, and no toggles", () => {
  const { q, paths, row, cleanup } = mount(withGrads(), {
    variant: "report", controls: {}, status: { target: "model", elapsed_ms: 12, message: "", level: "" },
  });
  assert.deepEqual(paths(), [`['${EVIL}']`, "b0.act", "b0.pert", "head.p2"]);
  assert.equal(row("b0.pert").querySelector("td.c-gmean").textContent, "0.125");
  assert.equal(q("tr.nnx-capture-module").length > 0, true);
  assert.equal(q("svg.nnx-capture-hist").length > 0, true);
  assert.equal(q("input").length, 0);
  assert.equal(q(".nnx-capture-controls").length + q(".nnx-capture-pending").length, 0);
  const head = q(".nnx-capture-head")[0].textContent;
  assert.ok(head.startsWith("%%nnx_capture \u00B7 model") && !head.includes("call"), head);
  cleanup();
});

test("before any call and with nothing captured: a note instead of rows; messages and errors shown", () => {
  let m = mount({}, { status: { target: "Net", calls: 0, message: "", level: "" } });
  let empty = m.q(".nnx-empty")[0];
  assert.equal(empty.hidden, false);
  assert.ok(empty.textContent.startsWith("no call yet"));
  assert.equal(m.q("ul.nnx-capture-messages")[0].hidden, true);
  m.cleanup();

  const nothing = forward();
  nothing.snapshot = snap({ nodes: { parent: [], key: [], type: [] }, rows: { parent: [], key: [], type: [] }, stats: {} });
  nothing.hist.rows = [];
  nothing.messages = [`Net sowed nothing under Intermediate; it sowed ${EVIL}`];
  m = mount(nothing, { status: { target: "Net", calls: 1, message: "keep at least one Variable type", level: "error" } });
  empty = m.q(".nnx-empty")[0];
  assert.equal(empty.textContent, "nothing captured");
  const msgs = m.q("ul.nnx-capture-messages")[0];
  assert.equal(msgs.hidden, false);
  assert.deepEqual(msgs.children.map((li) => li.textContent), nothing.messages);
  const status = m.q(".nnx-capture-status")[0];
  assert.equal(status.getAttribute("data-level"), "error");
  assert.equal(status.textContent, "keep at least one Variable type");
  m.cleanup();
});

test("many captured values: only a window of rows is in the DOM", () => {
  const n = 5000;
  const big = forward();
  big.snapshot = snap({
    nodes: { parent: [], key: [], type: [] },
    rows: { parent: new Array(n).fill(-1), key: Array.from({ length: n }, (_, i) => `v${i}`), type: new Array(n).fill(0) },
    stats: {},
  });
  big.hist.rows = Array.from({ length: n }, () => [0, 1, 1, 2, 3, 4]);
  const { q, cleanup } = mount(big);
  assert.ok(q("tr.nnx-capture-row").length < 100, q("tr.nnx-capture-row").length);
  assert.ok(q("tr.nnx-capture-row").length > 10);
  cleanup();
});
