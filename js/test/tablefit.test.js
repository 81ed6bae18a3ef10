import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeDocument } from "./fakedom.js";
import { TABLE_CHROME, tableFit, tableRoom } from "../src/shared/tablefit.js";
import { COLUMNS as SUMMARY, PATH_MIN_WIDTH as SUMMARY_PATH } from "../src/summary/data.js";
import { COLUMNS as COMPARE, PATH_MIN_WIDTH as COMPARE_PATH } from "../src/compare/data.js";

/** A tableFit on a fake root whose ResizeObserver the test fires at `width` px. */
function mountFit(columns, minWidth, present = null) {
  const observers = [];
  const saved = globalThis.ResizeObserver;
  globalThis.ResizeObserver = class {
    constructor(cb) {
      this.cb = cb;
      observers.push(this);
    }
    observe(el) {
      this.el = el;
    }
    disconnect() {}
  };
  const doc = new FakeDocument();
  const root = doc.createElement("div");
  const scroller = doc.createElement("div");
  let changes = 0;
  const fit = tableFit(doc, { root, scroller, minWidth, onChange: () => changes++ });
  globalThis.ResizeObserver = saved;
  fit.set(columns, present);
  const resize = (width) => {
    root.clientWidth = width;
    for (const o of observers) if (o.el === root) o.cb([]);
  };
  const shown = () => fit.shown(columns.filter((c) => !present || present.has(c.id))).map((c) => c.id);
  return { fit, resize, shown, changes: () => changes };
}

test("tableRoom: a root's width less its padding, the scroll box's borders and a scrollbar", () => {
  assert.equal(tableRoom(800), 800 - TABLE_CHROME);
  assert.equal(tableRoom(0), 0); // not laid out yet: nothing folds
});

test("the summary at 800 px (with --grad) keeps module call, class, output shapes, params, FLOPs, backward FLOPs", () => {
  const present = new Set(SUMMARY.map((c) => c.id));
  const m = mountFit(SUMMARY, SUMMARY_PATH, present);
  assert.deepEqual(
    m.shown(),
    SUMMARY.map((c) => c.id),
  ); // before a width: every column
  m.resize(798); // JupyterLab's 800 px output less the widget's border
  assert.deepEqual(m.shown(), ["path", "cls", "outputs", "params", "flops", "bwd"]);
  assert.equal(m.fit.picker.children[0].textContent, "+3 columns");
  assert.equal(m.changes(), 1);
  m.resize(798); // the same width again: no redraw
  assert.equal(m.changes(), 1);
  m.resize(1400);
  assert.equal(m.fit.folded().size, 0);
  assert.equal(m.fit.picker.children[0].textContent, "columns");
  assert.equal(m.changes(), 2);
});

test("the compare widget at 800 px keeps path, status, relative change, max difference, cosine, shape", () => {
  const m = mountFit(COMPARE, COMPARE_PATH);
  m.resize(798);
  assert.deepEqual(m.shown(), ["path", "status", "rel_change", "max_abs", "cosine", "shape"]);
  m.resize(1046);
  assert.deepEqual(m.shown(), ["path", "status", "rel_change", "max_abs", "cosine", "frac_changed", "shape", "note"]);
});

test("a column the user picks shows at any width, and one the user hides stays hidden", () => {
  const m = mountFit(COMPARE, COMPARE_PATH);
  m.resize(798);
  const box = (id) => m.fit.picker.children[1].children.find((l) => l.children[0].getAttribute("data-col") === id);
  const pick = (id, on) => {
    const input = box(id).children[0];
    input.checked = on;
    m.fit.picker.children[1].dispatch("change", { target: input });
  };
  pick("note", true);
  assert.ok(m.shown().includes("note"));
  m.resize(1600);
  pick("rel_change", false);
  assert.ok(!m.shown().includes("rel_change"));
  assert.ok(m.shown().includes("dtype"));
});
