// The whole widget rendered into a fake DOM with a fake anywidget model.
import test from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";
import { sequential, sequentialStatic, tricky } from "./fixtures.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);
const tick = (ms = 10) => new Promise((r) => setTimeout(r, ms));

const { default: widget } = await import("../src/viewer.js");

const EVIL = "<img src=x onerror=alert(1)>";

// manager: the model's widget manager (a notebook's has a kernel; html-manager's, on a saved page, none)
function mount(snapshot, extra = {}, { manager = { kernel: {} }, parent = null } = {}) {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  if (parent) {
    const outer = doc.createElement("div");
    outer.classList.add(parent);
    outer.appendChild(el);
  }
  const model = new FakeModel({
    snapshot,
    status: { state: "live", message: "", last_refresh: 1700000000, cost_ms: 4.5, refreshes: 3, interval_s: 1 },
    sparkline_stat: "norm",
    ...extra,
  });
  if (manager) model.widget_manager = manager;
  const cleanup = widget.render({ model, el });
  const q = (sel) => el.querySelectorAll(sel);
  const paths = () => q("tr[data-path]").map((t) => t.getAttribute("data-path"));
  const row = (path) => q("tr[data-path]").find((t) => t.getAttribute("data-path") === path);
  return { doc, el, model, cleanup, q, paths, row };
}

test("renders rows, modules, header cells and asks for history and scalars once", async () => {
  const { el, model, q, paths, row, cleanup } = mount(sequential());
  assert.equal(el.children[0].getAttribute("class"), "nnx-lab-viewer");
  assert.deepEqual(paths(), [
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
  assert.equal(q("tr.nnx-row").length, 6);
  assert.equal(q("tr.nnx-module").length, 3);
  const kernel = row("layers[0].kernel");
  const cell = (c) => kernel.querySelector(`td.c-${c}`).textContent;
  assert.equal(cell("path"), "kernel");
  assert.equal(cell("type"), "Param");
  assert.equal(cell("shape"), "(2, 3)");
  assert.equal(cell("dtype"), "float32");
  assert.equal(cell("bytes"), "24 B");
  assert.equal(cell("place"), "cpu:0");
  assert.equal(cell("mean"), "-0.264");
  assert.equal(cell("norm"), "1.665");
  assert.equal(cell("nonfinite"), "");
  assert.equal(cell("status"), "");
  for (const c of [
    "path",
    "type",
    "shape",
    "dtype",
    "bytes",
    "place",
    "mean",
    "std",
    "min",
    "max",
    "norm",
    "nonfinite",
    "spark",
    "status",
  ]) {
    assert.equal(q(`th[data-col=${c}]`).length, 1, c);
    assert.equal(kernel.querySelectorAll(`td.c-${c}`).length, 1, c);
  }
  const layers = row("layers");
  assert.equal(layers.querySelector("td.c-shape").textContent, "6 vars");
  assert.equal(layers.querySelector("td.c-bytes").textContent, "84 B");
  assert.equal(q(".nnx-banner")[0].hidden, true);
  assert.equal(q(".nnx-type-chip").length, 2);
  assert.ok(q(".nnx-devices")[0].textContent.includes("cpu \u00D7 1"));
  assert.deepEqual(model.sent, [{ type: "stats" }, { type: "history", stat: "norm" }, { type: "scalars" }]);
  assert.equal(q(".nnx-scalars")[0].hidden, true); // nothing logged: no header curves
  // First paint is stamped from an animation frame: wait for it (a loaded machine delays frames).
  for (let waited = 0; el.dataset.firstPaintMs === undefined && waited < 5000; waited += 10) await tick(10);
  assert.ok(Number(el.dataset.firstPaintMs) >= 0);
  cleanup();
  assert.equal(model.handlers["change:snapshot"].length, 0);
  assert.equal(model.handlers["msg:custom"].length, 0);
});

test("user strings stay text (XSS)", async () => {
  const snap = tricky();
  snap.rows.key[4] = EVIL;
  snap.nodes.type[1] = EVIL;
  snap.tables.type[1] = EVIL;
  snap.rows.note[5] = EVIL;
  snap.root_type = EVIL;
  const { doc, q, row, cleanup } = mount(snap);
  const evil = row(`d['${EVIL}']`);
  assert.ok(evil);
  assert.equal(evil.querySelector("td.c-path").textContent, `['${EVIL}']`);
  assert.equal(evil.querySelector("td.c-type").textContent, EVIL);
  assert.ok(row("d['a b']").querySelector("td.c-status").textContent.includes(EVIL));
  assert.ok(!doc.calls.some((c) => c[0] === "createElement" && c[1] === "img"));
  cleanup();
});

test("click toggles a module, header click sorts", async () => {
  const { q, paths, row, cleanup } = mount(tricky());
  row("blocks").querySelector("td.c-path").dispatch("click");
  await tick();
  assert.deepEqual(paths(), ["blocks", "d", "d['<script>']", "d['a b']", "step", "empty"]);
  row("blocks").dispatch("click");
  await tick();
  q("th[data-col=bytes]")[0].dispatch("click");
  q("th[data-col=bytes]")[0].dispatch("click");
  await tick();
  assert.equal(q("th[data-col=bytes]")[0].getAttribute("aria-sort"), "descending");
  assert.equal(q("th[data-col=bytes]")[0].textContent, "bytes\u25BC");
  assert.deepEqual(paths().slice(0, 3), ["blocks", "blocks[1]", "blocks[1].w"]);
  q("th[data-col=bytes]")[0].dispatch("click");
  await tick();
  assert.equal(q("th[data-col=bytes]")[0].getAttribute("aria-sort"), null);
  assert.deepEqual(paths().slice(0, 3), ["blocks", "blocks[0]", "blocks[0].w"]);
  cleanup();
});

test("filter box and type chips", async () => {
  const { q, paths, cleanup } = mount(tricky());
  const input = q("input.nnx-filter")[0];
  input.value = "ATTN.Q";
  input.dispatch("input");
  await tick();
  assert.deepEqual(paths(), [
    "blocks",
    "blocks[0]",
    "blocks[0].attn",
    "blocks[0].attn.q",
    "blocks[1]",
    "blocks[1].attn",
    "blocks[1].attn.q",
  ]);
  input.value = "";
  input.dispatch("input");
  await tick();
  assert.equal(paths().length, 14);
  cleanup();
  const snap = tricky();
  snap.totals = {
    Param: { count: 4, size: 1, bytes: 1 },
    Custom: { count: 2, size: 1, bytes: 1 },
    all: { count: 6, size: 1, bytes: 1 },
  };
  const w = mount(snap);
  w.q(".nnx-type-chip[data-type=Custom]")[0].dispatch("click");
  await tick();
  assert.deepEqual(w.paths(), ["d", "d['<script>']", "d['a b']"]);
  w.q(".nnx-type-chip[data-type=Custom]")[0].dispatch("click");
  await tick();
  assert.equal(w.paths().length, 14);
  w.cleanup();
});

test("every cell shows the text Python's static table writes for the same snapshot", async () => {
  const { row, q, el, cleanup } = mount(sequential());
  const expected = sequentialStatic();
  const paths = Object.keys(expected.rows);
  assert.equal(q("tr.nnx-row").length, paths.length);
  for (const path of paths) {
    const tr = row(path);
    assert.ok(tr, path);
    for (const [col, text] of Object.entries(expected.rows[path])) {
      assert.equal(tr.querySelector(`td.c-${col}`).textContent, text, `${path} ${col}`);
    }
  }
  for (const path of expected.nodes) assert.ok(row(path), path);
  assert.ok(el.textContent.includes("84 B"));
  cleanup();
});

test("refreshes append to the sparkline, history replies replace it, structure change re-asks", async () => {
  const { model, row, cleanup } = mount(sequential());
  const next = sequential({ refresh: 2 });
  next.stats.norm = [0, 2, 0, 0, 2, 2];
  model.set("snapshot", next);
  await tick();
  const spark = () => row("layers[0].kernel").querySelector("td.c-spark");
  assert.equal(spark().getAttribute("title"), "norm: 2 (2 refreshes)");
  assert.equal(spark().querySelectorAll("path").length, 1);
  const L = 5;
  const buf = new Float32Array(6 * L).fill(1);
  model.emit("msg:custom", { type: "history", stat: "norm", structure: 1, rows: 6, length: L, refresh: 2 }, [
    new DataView(buf.buffer),
  ]);
  await tick();
  assert.equal(spark().getAttribute("title"), "norm: 1 (5 refreshes)");
  assert.equal(model.sent.length, 3); // stats, history and scalars, on first render
  model.set("snapshot", sequential({ refresh: 3, structure: 2 }));
  await tick();
  assert.deepEqual(model.sent.at(-1), { type: "history", stat: "norm" });
  assert.equal(model.sent.length, 4);
  cleanup();
});

test("choosing another statistic saves the trait and asks for its history", async () => {
  const { model, q, cleanup } = mount(sequential());
  const sel = q("select.nnx-stat")[0];
  sel.value = "abs_max";
  sel.dispatch("change");
  assert.equal(model.get("sparkline_stat"), "abs_max");
  assert.equal(model.saves, 1);
  assert.deepEqual(model.sent.at(-1), { type: "history", stat: "abs_max" });
  assert.equal(model.sent.length, 4); // stats, history, scalars on render, then this history
  await tick();
  assert.equal(q("th[data-col=spark]")[0].getAttribute("title"), "trend of abs_max over the last refreshes");
  q("button.nnx-refresh")[0].dispatch("click");
  assert.deepEqual(model.sent.at(-1), { type: "refresh", id: "refresh-1" });
  cleanup();
});

test("a kernel restart (the comm marked not live) says so, and refresh now and pinning stop", async () => {
  const { el, model, q, cleanup } = mount(sequential());
  const status = () => q(".nnx-status")[0];
  assert.equal(status().getAttribute("data-state"), "live");
  // ipywidgets 7 and 8 on a restart: the model's comm_live becomes false, its views get this class.
  el.classList.add("jupyter-widgets-disconnected");
  model.emit("comm_live_update");
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(status().getAttribute("data-state"), "disconnected");
  assert.ok(status().textContent.includes("disconnected"), status().textContent);
  assert.ok(status().textContent.includes("the kernel restarted; run the cell again"), status().textContent);
  assert.equal(q("button.nnx-refresh")[0].disabled, true);
  assert.equal(q("button.nnx-baseline-pin")[0].disabled, true);
  model.set("status", { state: "live", message: "", refreshes: 4 }); // (a stale echo) the front end knows better
  assert.equal(status().getAttribute("data-state"), "disconnected");
  cleanup();
});

test("a page drawn from saved widget state (no kernel behind its manager) says 'a saved copy', not a restart", async () => {
  // html-manager (an exported notebook, VS Code's saved outputs): the views are marked disconnected from the start.
  const { q, cleanup } = mount(sequential(), {}, { manager: null, parent: "jupyter-widgets-disconnected" });
  const status = q(".nnx-status")[0];
  assert.equal(status.getAttribute("data-state"), "saved");
  assert.ok(status.textContent.includes("a saved copy: no kernel is behind this page"), status.textContent);
  assert.ok(!status.textContent.includes("restarted"), status.textContent);
  assert.equal(q("button.nnx-refresh")[0].disabled, true);
  cleanup();
});

test("a new kernel process signing IOPub status (a REST restart whose 'starting' was dropped) says so", async () => {
  const signal = () => {
    const slots = [];
    return {
      slots,
      connect: (f) => slots.push(f),
      disconnect: (f) => slots.splice(slots.indexOf(f), 1),
      emit: (v) => slots.slice().forEach((f) => f(null, v)),
    };
  };
  const kernel = { statusChanged: signal(), iopubMessage: signal() };
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const model = new FakeModel({
    snapshot: sequential(),
    status: { state: "live", message: "", refreshes: 3, interval_s: 1 },
    sparkline_stat: "norm",
  });
  model.widget_manager = { kernel };
  const cleanup = widget.render({ model, el });
  const state = () => el.querySelectorAll(".nnx-status")[0].getAttribute("data-state");
  const msg = (type, session) => ({ header: { msg_type: type, session } });
  kernel.iopubMessage.emit(msg("status", "old-kernel"));
  kernel.iopubMessage.emit(msg("stream", "the-server")); // the server's "IOPub data rate exceeded"
  kernel.iopubMessage.emit(msg("status", "old-kernel"));
  assert.equal(state(), "live");
  kernel.iopubMessage.emit(msg("status", "new-kernel"));
  assert.equal(state(), "disconnected");
  assert.ok(el.querySelectorAll(".nnx-status")[0].textContent.includes("the kernel restarted; run the cell again"));
  cleanup();
  assert.equal(kernel.iopubMessage.slots.length, 0); // a closed view stops listening
  assert.equal(kernel.statusChanged.slots.length, 0);
});

test("a refresh now that gets no answer says so, until an answer comes", async () => {
  const { ANSWER_MS } = await import("../src/viewer/connection.js");
  const { model, q, cleanup } = mount(sequential());
  const realTimeout = globalThis.setTimeout;
  const timers = [];
  globalThis.setTimeout = (f, ms) => (ms === ANSWER_MS ? timers.push(f) : realTimeout(f, ms));
  try {
    q("button.nnx-refresh")[0].dispatch("click");
  } finally {
    globalThis.setTimeout = realTimeout;
  }
  assert.equal(timers.length, 1);
  timers[0](); // ANSWER_MS passed without an answer
  const status = q(".nnx-status")[0];
  assert.ok(status.textContent.includes("no answer from the kernel after 10 s"), status.textContent);
  assert.equal(q("button.nnx-refresh")[0].disabled, false); // maybe busy: one may try again
  model.emit("msg:custom", { type: "ack", id: "refresh-1", state: "done" }, []);
  assert.equal(status.getAttribute("data-state"), "live");
  cleanup();
});

test("NaN banner, status states, empty snapshot", async () => {
  const { model, q, row, cleanup } = mount({});
  assert.equal(q("tr[data-path]").length, 0);
  assert.ok(q(".nnx-title")[0].textContent.includes("waiting"));
  model.set("snapshot", tricky());
  await tick();
  const banner = q(".nnx-banner")[0];
  assert.equal(banner.hidden, false);
  assert.ok(banner.textContent.includes("blocks[1].w: 2 NaN, 1 Inf"));
  assert.equal(row("blocks[1].w").querySelector("td.c-nonfinite").textContent, "2 NaN, 1 Inf");
  model.set("status", { state: "gone", message: "", last_refresh: null, cost_ms: null, refreshes: 3, interval_s: 1 });
  const status = q(".nnx-status")[0];
  assert.equal(status.getAttribute("data-state"), "gone");
  assert.ok(status.textContent.includes("model is gone (garbage-collected)"));
  model.set("status", {
    state: "error",
    message: "boom",
    last_refresh: null,
    cost_ms: null,
    refreshes: 3,
    interval_s: 1,
  });
  assert.ok(status.textContent.includes("boom"));
  cleanup();
});

test("only a window of a 10 000-Variable model is in the DOM", async () => {
  const n = 10000;
  const snap = {
    version: 1,
    root_type: "Big",
    refresh: 1,
    structure: 1,
    nodes: { parent: [-1], key: ["layers"], type: ["List"] },
    rows: {
      parent: new Array(n).fill(0),
      key: Array.from({ length: n }, (_, i) => i),
      type: new Array(n).fill(0),
      dtype: new Array(n).fill(0),
      sharding: new Array(n).fill(-1),
      devices: new Array(n).fill(-1),
      metadata: new Array(n).fill(-1),
      status: new Array(n).fill(0),
      shape: new Array(n).fill([4]),
      nbytes: new Array(n).fill(16),
    },
    stats: { norm: Array.from({ length: n }, (_, i) => i) },
    tables: { type: ["Param"], dtype: ["float32"], sharding: [], devices: [], metadata: [], status: ["ok"] },
    totals: { Param: { count: n, size: 4 * n, bytes: 16 * n }, all: { count: n, size: 4 * n, bytes: 16 * n } },
    devices: {},
  };
  const { q, paths, cleanup } = mount(snap);
  assert.ok(q("tr.nnx-row").length < 60, String(q("tr.nnx-row").length));
  assert.equal(paths()[1], "layers[0]");
  const spacers = q("tr.nnx-spacer");
  assert.equal(spacers.length, 2);
  cleanup();
});

test("a live refresh updates rows in place (a click in progress keeps its target)", async () => {
  const { model, row, q, cleanup } = mount(sequential());
  const layers = row("layers");
  const kernel = row("layers[0].kernel");
  const meanTd = kernel.querySelector("td.c-mean");
  const chip = q(".nnx-type-chip")[0];
  const next = sequential({ refresh: 2 });
  next.stats.mean = [0, 0.5, 0, 0, 1, 1];
  model.set("snapshot", next);
  await tick();
  assert.equal(row("layers"), layers);
  assert.equal(row("layers[0].kernel"), kernel);
  assert.equal(kernel.querySelector("td.c-mean"), meanTd);
  assert.equal(meanTd.textContent, "0.5");
  assert.equal(q(".nnx-type-chip")[0], chip);
  cleanup();
});

test("a statistic set from Python that the menu lacks is added to it", async () => {
  const { model, q, cleanup } = mount(sequential(), { sparkline_stat: "zero_frac" });
  const sel = q("select.nnx-stat")[0];
  assert.equal(sel.value, "zero_frac");
  assert.ok(sel.querySelectorAll("option").some((o) => o.getAttribute("value") === "zero_frac"));
  assert.deepEqual(model.sent, [{ type: "stats" }, { type: "history", stat: "zero_frac" }, { type: "scalars" }]);
  model.set("sparkline_stat", "std");
  assert.equal(sel.value, "std");
  assert.deepEqual(model.sent.at(-1), { type: "history", stat: "std" });
  cleanup();
});

test("a row placed against its sharding annotation is marked, with both in the cell's title as text", async () => {
  const snap = sequential();
  snap.tables.logical = [`('embed', '${EVIL}')`];
  snap.tables.sharding = ["P('data',) @ mesh(data=2)"];
  snap.rows.logical = [-1, 0, -1, -1, -1, -1];
  snap.rows.sharding = [-1, 0, -1, -1, -1, -1];
  snap.rows.mismatch = [null, `placed P('data',) but annotated P('embed', '${EVIL}')`, null, null, null, null];
  const { row, el, cleanup } = mount(snap);
  const place = row("layers[0].kernel").querySelector("td.c-place");
  assert.ok(place.getAttribute("class").split(" ").includes("bad"));
  assert.equal(place.textContent, "\u2260 P('data',) @ mesh(data=2)"); // the mark first: seen in a narrow column
  const title = place.getAttribute("title");
  assert.ok(title.includes(`logical: ('embed', '${EVIL}')`) && title.includes("\u2260 placed P('data',)"));
  assert.ok(!row("layers[0].bias").querySelector("td.c-place").getAttribute("class").includes("bad"));
  assert.equal(el.querySelectorAll("img").length, 0);
  cleanup && cleanup();
});

test("a stats message updates the numbers and the sparkline without new rows; a stale or foreign one is ignored", async () => {
  const { model, row, cleanup } = mount(sequential());
  const R = 6;
  const names = ["mean", "std", "min", "max", "norm", "abs_max", "nan_count", "inf_count", "zero_frac"];
  const buf = new Float32Array(names.length * R).fill(NaN);
  const put = (name, r, v) => {
    buf[names.indexOf(name) * R + r] = v;
  };
  for (let r = 0; r < R; r++) put("nan_count", r, 0);
  put("mean", 1, 0.25);
  put("norm", 1, 3);
  const kernel = row("layers[0].kernel");
  const send = (extra, b = buf) =>
    model.emit("msg:custom", { type: "stats", refresh: 2, structure: 1, rows: R, names, exact: {}, ...extra }, [
      new DataView(b.buffer),
    ]);
  send({ exact: { 1: [1e300, null, null, null, 3, null, 0, 0, null] } });
  await tick();
  assert.equal(row("layers[0].kernel"), kernel); // the same row element: only the numbers changed
  assert.equal(kernel.querySelector("td.c-mean").textContent, "1e+300");
  assert.equal(kernel.querySelector("td.c-spark").getAttribute("title"), "norm: 3 (2 refreshes)");
  send({ refresh: 1 }); // older than what is shown
  send({ structure: 7, refresh: 5 }); // rows of another structure
  send({ rows: 3, refresh: 6 });
  await tick();
  assert.equal(kernel.querySelector("td.c-mean").textContent, "1e+300");
  cleanup();
});
