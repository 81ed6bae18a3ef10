// The header's scalar curves and the NaN/Inf alert banner, on Python's payloads (tools/js_fixtures.py).
import nodeTest from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";
import { fixture, number, testWith } from "./generated.js";
import { h } from "../src/shared/dom.js";
import { buildTree } from "../src/shared/tree.js";
import { alertParts, fillBanner } from "../src/viewer/panels.js";
import { fillScalars, parseScalars } from "../src/viewer/scalars.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);
const tick = (ms = 10) => new Promise((r) => setTimeout(r, ms));
const { default: widget } = await import("../src/viewer.js");

const test = testWith(nodeTest, "viewer_alert_scalar", "viewer_alert_variable");
const EVIL = "<img src=x onerror=alert(1)>";

/** The "scalars" message Python sent, with its two float64 buffers as anywidget hands them (DataViews). */
function scalarsMessage() {
  const { msg, steps, values } = fixture("viewer_alert_scalar").scalars;
  const s = new Float64Array(steps);
  const v = new Float64Array(values.map(number));
  return { msg, buffers: [new DataView(s.buffer), new DataView(v.buffer)] };
}

function mount(name) {
  const payload = fixture(name);
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const model = new FakeModel({
    snapshot: payload.snapshot,
    alert: payload.alert,
    sparkline_stat: "norm",
    status: { state: "live", message: "", last_refresh: 1700000000, cost_ms: 1, refreshes: 3, interval_s: 1 },
  });
  const cleanup = widget.render({ model, el });
  return { doc, el, model, cleanup, payload, q: (sel) => el.querySelectorAll(sel) };
}

test("a scalars message becomes one curve per name with its last value and step", () => {
  const { msg, buffers } = scalarsMessage();
  const curves = parseScalars(msg, buffers);
  assert.deepEqual(
    curves.map((c) => c.name),
    ["loss", "lr"],
  );
  assert.deepEqual(
    curves.map((c) => c.values.length),
    msg.counts,
  );
  const loss = curves[0];
  assert.equal(loss.steps[0], 1);
  assert.equal(loss.steps.at(-1), 40);
  assert.ok(Number.isNaN(loss.values[20])); // step 21's NaN loss is a value
  const doc = new FakeDocument();
  const el = h(doc, "div", { hidden: true });
  fillScalars(doc, el, curves);
  assert.equal(el.hidden, false);
  const item = el.querySelector(".nnx-scalar[data-name=loss]");
  assert.equal(item.querySelector(".nnx-scalar-name").textContent, "loss");
  assert.equal(item.querySelector(".nnx-scalar-value").textContent, "0.025"); // Python's latest value, 4 digits
  assert.equal(number(fixture("viewer_alert_scalar").scalars.latest.loss).toPrecision(4), "0.02500");
  assert.equal(item.querySelector(".nnx-scalar-step").textContent, "step 40");
  assert.ok(item.querySelector("path").getAttribute("d").startsWith("M"));
  assert.equal(item.querySelectorAll("line.bad").length, 1); // the NaN point is marked
  assert.equal(el.querySelector(".nnx-scalar[data-name=lr]").querySelector(".nnx-scalar-value").textContent, "0.001");
});

test("malformed scalars messages are ignored; names are text", () => {
  const { msg, buffers } = scalarsMessage();
  assert.equal(parseScalars({ ...msg, counts: [1, 2] }, buffers), null);
  assert.equal(parseScalars(msg, [buffers[0]]), null);
  assert.equal(parseScalars({ ...msg, names: ["a"] }, buffers), null);
  assert.equal(parseScalars({ type: "history" }, buffers), null);
  const doc = new FakeDocument();
  const el = h(doc, "div");
  fillScalars(doc, el, [{ name: EVIL, steps: new Float64Array([3]), values: new Float64Array([Infinity]) }]);
  assert.equal(el.querySelector(".nnx-scalar-name").textContent, EVIL);
  assert.equal(el.querySelector(".nnx-scalar-value").getAttribute("class"), "nnx-scalar-value bad");
  assert.equal(el.querySelector(".nnx-scalar-value").textContent, "inf");
  assert.ok(!doc.calls.some((c) => c[0] === "createElement" && c[1] === "img"));
  fillScalars(doc, el, []);
  assert.equal(el.hidden, true);
});

test("the alert banner says what Python says: first step, refresh and where; now", () => {
  for (const name of ["viewer_alert_scalar", "viewer_alert_variable"]) {
    const { alert, text, snapshot } = fixture(name);
    const { head, where, tail } = alertParts(alert);
    assert.equal(head + where + tail, text, name);
    const doc = new FakeDocument();
    const el = h(doc, "div", { hidden: true });
    fillBanner(doc, el, snapshot, buildTree(snapshot), alert);
    assert.equal(el.hidden, false);
    assert.equal(el.querySelector(".nnx-banner-text").textContent, text);
    assert.equal(el.querySelector("code").textContent, alert.where);
    assert.equal(el.querySelectorAll("button.nnx-banner-clear").length, 1);
  }
  assert.equal(fixture("viewer_alert_variable").text, "first NaN at step 10 (refresh 2) in layers[0].bias; now clean");
  // The sentence is Python's (head, where, tail): the front end writes none of it.
  assert.deepEqual(alertParts({ step: 3, refresh: 1, where: "w" }), { head: "", where: "w", tail: "" });
});

test("in the widget: curves arrive by message, the banner names the step, clear asks Python", async () => {
  const { model, q, cleanup, payload } = mount("viewer_alert_variable");
  const banner = q(".nnx-banner")[0];
  assert.equal(banner.hidden, false);
  assert.equal(banner.getAttribute("data-state"), "clean");
  assert.ok(banner.textContent.includes("step 10 (refresh 2)"));
  const tree = buildTree(payload.snapshot);
  assert.equal(tree.rowPath[Number(banner.getAttribute("data-row"))], "layers[0].bias");
  const { msg, buffers } = scalarsMessage();
  model.emit("msg:custom", msg, buffers);
  await tick();
  assert.deepEqual(
    q(".nnx-scalar").map((e) => e.getAttribute("data-name")),
    ["loss", "lr"],
  );
  banner.querySelector("button.nnx-banner-clear").dispatch("click");
  assert.deepEqual(model.sent.at(-1), { type: "clear_alert" });
  model.set("alert", {});
  await tick();
  assert.equal(banner.hidden, true); // this snapshot is clean: nothing left to say
  cleanup();
});
