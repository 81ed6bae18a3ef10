// The capture panel rendered into a fake DOM with a fake anywidget model (toggles become custom
// messages; the report becomes rows with histograms), on hand-made edge-case payloads.
import test from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";
import { EVIL, EVIL_CLASS, controls, forward, snap, withGrads } from "./capturefixtures.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);

const { default: widget } = await import("../src/capture.js");

function mount(report = forward(), extra = {}) {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const model = new FakeModel({
    controls: controls(),
    report,
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
  const tags = new Set(
    doc.calls.filter((c) => c[0] !== "createTextNode" && c[0] !== "textContent").map((c) => c.at(-1)),
  );
  for (const t of tags)
    assert.match(
      t,
      /^(div|span|style|label|input|details|summary|button|ul|li|table|colgroup|col|thead|tbody|tr|th|td|svg|path|line)$/,
      t,
    );
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
  assert.deepEqual(
    model.sent.map(({ id, ...m }) => m),
    [
      { type: "type", name: "Perturbation", on: true },
      { type: "methods", on: true },
      { type: "module", path: "b0", on: false },
      { type: "modules", on: false },
      { type: "modules", on: true },
    ],
  );
  const ids = model.sent.map((m) => m.id);
  assert.ok(
    ids.every((id, i) => Number.isInteger(id) && (i === 0 || id > ids[i - 1])),
    String(ids),
  );
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
    status: {
      target: "Net",
      calls: 2,
      kind: "grads",
      loss: 0.3333333,
      loss_text: "0.3333",
      elapsed_ms: 12,
      message: "",
      level: "",
    },
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
    variant: "report",
    controls: {},
    status: { target: "model", elapsed_ms: 12, message: "", level: "" },
  });
  assert.deepEqual(paths(), [`['${EVIL}']`, "b0.act", "b0.pert", "head.p2"]);
  assert.equal(row("b0.pert").querySelector("td.c-gmean").textContent, "0.125");
  assert.equal(q("tr.nnx-capture-module").length > 0, true);
  assert.equal(q("svg.nnx-capture-hist").length > 0, true);
  assert.equal(q("input").length, q("input[data-col]").length); // the column picker's boxes only
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
  nothing.snapshot = snap({
    nodes: { parent: [], key: [], type: [] },
    rows: { parent: [], key: [], type: [] },
    stats: {},
  });
  nothing.hist.rows = [];
  nothing.messages = [`Net sowed nothing under Intermediate; it sowed ${EVIL}`];
  m = mount(nothing, {
    status: { target: "Net", calls: 1, message: "keep at least one Variable type", level: "error" },
  });
  empty = m.q(".nnx-empty")[0];
  assert.equal(empty.textContent, "nothing captured");
  const msgs = m.q("ul.nnx-capture-messages")[0];
  assert.equal(msgs.hidden, false);
  assert.deepEqual(
    msgs.children.map((li) => li.textContent),
    nothing.messages,
  );
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
    rows: {
      parent: new Array(n).fill(-1),
      key: Array.from({ length: n }, (_, i) => `v${i}`),
      type: new Array(n).fill(0),
    },
    stats: {},
  });
  big.hist.rows = Array.from({ length: n }, () => [0, 1, 1, 2, 3, 4]);
  const { q, cleanup } = mount(big);
  assert.ok(q("tr.nnx-capture-row").length < 100, q("tr.nnx-capture-row").length);
  assert.ok(q("tr.nnx-capture-row").length > 10);
  cleanup();
});
