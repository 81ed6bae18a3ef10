// The memory widget on a real ledger's payload (tools/js_fixtures.py): the tree device -> holder ->
// group with Python's byte texts and bars, "shared with" notes, the per-device line, the freeing
// statements as text with the bytes each returns, every name written as text; sorting, collapsing,
// filtering; the columns at 800 px and narrower.
import test from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";
import { fixture } from "./generated.js";
import { labelNeed, nextSort, prepare, sharedNeed, sharedWidth, visibleRows } from "../src/memory/data.js";
import { TABLE_CHROME } from "../src/shared/tablefit.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);
const tick = (ms = 10) => new Promise((r) => setTimeout(r, ms));

const { default: widget } = await import("../src/memory.js");
const HOSTILE = "<img src=x onerror=alert(1)>";

function mount(payload) {
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
  const el = doc.createElement("div");
  const model = new FakeModel({ ledger: payload });
  const cleanup = widget.render({ model, el });
  globalThis.ResizeObserver = saved;
  const resize = (width) => {
    const root = el.querySelector(".nnx-lab-memory-view");
    root.clientWidth = width;
    for (const o of observers) if (o.el === root) o.cb([]);
  };
  const labels = () => el.querySelectorAll("tr.nnx-mem-row").map((tr) => tr.getAttribute("data-label"));
  const row = (label) => el.querySelectorAll("tr.nnx-mem-row").find((tr) => tr.getAttribute("data-label") === label);
  const headers = () => el.querySelectorAll("th").map((th) => th.getAttribute("data-col"));
  return { doc, el, model, cleanup, resize, labels, row, headers };
}

test("the tree lists each device, its holders biggest first, and their groups, with Python's bytes", async () => {
  const payload = fixture("memory_ledger");
  const m = mount(payload);
  await tick(30);
  const labels = m.labels();
  assert.equal(labels[0], "cpu:0");
  for (const name of ["grads_old", "optimizer", "model", "alias", "Out[3]", "(unreached)", HOSTILE]) {
    assert.ok(labels.includes(name), `${name} in ${labels}`);
  }
  assert.ok(labels.indexOf("grads_old") < labels.indexOf("optimizer"));
  assert.deepEqual(labels.slice(labels.indexOf("optimizer") + 1, labels.indexOf("optimizer") + 5), [
    "mu",
    "nu",
    "count",
    "step",
  ]);
  const grads = m.row("grads_old");
  assert.equal(grads.querySelector("td.c-bytes").textContent, "256.0 KiB");
  const bar = grads.querySelector("td.c-bytes").querySelector(".bar").getAttribute("style");
  const expected = (100 * payload.rows.find((r) => r.label === "grads_old").share).toFixed(2);
  assert.equal(bar, `width:${expected}%`);
  assert.ok(grads.querySelector("td.c-bytes").getAttribute("title").includes("no limit on this backend"));
  assert.equal(grads.querySelector("td.c-shared").textContent, "shared with alias");
  assert.equal(
    m.row("alias").querySelector("td.c-shared").textContent,
    "256.0 KiB shared with grads_old (counted there)",
  );
  // the per-device total line above the table
  assert.ok(m.el.querySelector(".nnx-mem-device").textContent.startsWith("cpu:0: ledger "));
  m.cleanup();
});

test("every name is text: a hostile holder name makes no element", async () => {
  const m = mount(fixture("memory_ledger"));
  await tick(30);
  assert.equal(m.el.querySelectorAll("img").length, 0);
  const cell = m.row(HOSTILE).querySelector("td.c-label");
  assert.ok(cell.textContent.endsWith(HOSTILE));
  const stmt = m.el.querySelectorAll("code").map((c) => c.textContent);
  assert.ok(stmt.includes(`del globals()['${HOSTILE}']`), stmt);
  m.cleanup();
});

test("the freeing statements are listed as code to copy, each with the bytes it returns", async () => {
  const m = mount(fixture("memory_ledger"));
  await tick(30);
  const items = m.el.querySelectorAll("li.nnx-mem-freeing");
  const pairs = items.map((li) => [
    li.querySelector("code").textContent,
    li.querySelector(".nnx-mem-returns").textContent,
  ]);
  assert.deepEqual(pairs.slice(0, 3), [
    ["del grads_old; del alias", "returns 256.0 KiB"],
    ["del optimizer", "returns 32.5 KiB"],
    ["del model; Out.pop(3, None)", "returns 16.3 KiB"],
  ]);
  assert.ok(items.every((li) => li.querySelector("button.nnx-mem-copy")));
  assert.ok(m.el.querySelector(".nnx-mem-free-title").textContent.includes("nnx_lab frees nothing"));
  m.cleanup();
});

test("clicking a holder folds its groups; 'holders only' folds them all; a filter finds a holder", async () => {
  const m = mount(fixture("memory_ledger"));
  await tick(30);
  const td = m.row("optimizer").querySelector("td.c-label");
  td.dispatch("click");
  await tick(30);
  assert.ok(!m.labels().includes("mu"));
  assert.equal(m.row("optimizer").getAttribute("aria-expanded"), "false");
  m.el.querySelector("button.nnx-mem-collapse").dispatch("click");
  await tick(30);
  assert.ok(
    m.labels().every((l) => !["mu", "Param", "array"].includes(l)),
    m.labels(),
  );
  assert.ok(m.labels().includes("grads_old"));
  m.el.querySelector("button.nnx-mem-expand").dispatch("click");
  const filter = m.el.querySelector("input.nnx-mem-filter");
  filter.value = "optim";
  filter.dispatch("input");
  await tick(30);
  assert.deepEqual(m.labels(), ["cpu:0", "optimizer", "mu", "nu", "count", "step"]);
  m.cleanup();
});

test("sorting orders siblings: bytes descending first, then ascending, then Python's order", () => {
  const prep = prepare(fixture("memory_ledger"));
  const holders = (sort) =>
    visibleRows(prep, { sort })
      .items.filter((i) => prep.rows[i].depth === 1)
      .map((i) => prep.rows[i].label);
  const python = holders(null);
  let sort = nextSort(null, "bytes");
  assert.deepEqual(sort, { column: "bytes", dir: "desc" });
  const desc = holders(sort);
  const bytes = (label) => prep.rows.find((r) => r.depth === 1 && r.label === label).bytes;
  assert.ok(
    desc.every((l, i) => i === 0 || bytes(desc[i - 1]) >= bytes(l)),
    desc,
  );
  sort = nextSort(sort, "bytes");
  const asc = holders(sort);
  assert.ok(
    asc.every((l, i) => i === 0 || bytes(asc[i - 1]) <= bytes(l)),
    asc,
  );
  assert.equal(nextSort(sort, "bytes"), null);
  assert.deepEqual(
    holders(nextSort(null, "label")),
    [...python].sort((a, b) => a.localeCompare(b)),
  );
  assert.equal(nextSort(null, "shared"), null); // not sortable
});

test("a header click sorts the table and marks the column", async () => {
  const m = mount(fixture("memory_ledger"));
  await tick(30);
  m.el.querySelector("th[data-col=bytes]").querySelector("span").dispatch("click");
  await tick(30);
  assert.equal(m.el.querySelector("th[data-col=bytes]").getAttribute("aria-sort"), "descending");
  m.cleanup();
});

test("where there is room, the shared column grows to read its longest text whole", async () => {
  const payload = fixture("memory_ledger");
  const need = sharedNeed(prepare(payload));
  assert.ok(need > 300, `${need}`); // "256.0 KiB shared with grads_old (counted there)"
  const m = mount(payload);
  await tick(30);
  const shared = () => m.el.querySelectorAll("col").find((c) => c.getAttribute("class") === "k-shared");
  m.resize(1000); // JupyterLab at 1200 px with its file browser open
  await tick(30);
  assert.equal(shared().getAttribute("style"), `width:${need}px`);
  m.resize(798); // narrower: its 250 px as before, every column still shown
  await tick(30);
  assert.equal(shared().getAttribute("style"), "width:250px");
  // the holder column keeps what its labels need; the widest the shared column gets is 380 px
  assert.equal(sharedWidth(2000, 1200, 314, 190), 380);
  assert.equal(sharedWidth(330, 722, 250, 190), 282); // DETR's ledger at 760 px: nearly whole
  assert.equal(sharedWidth(330, 722, 250, 400), 250); // long holder names keep their room
  const prep = prepare(payload);
  const deepest = Math.max(...prep.rows.map((r) => 26 + Number(r.depth) * 14 + String(r.label).length * 7.2));
  assert.equal(labelNeed(prep), Math.max(190, Math.ceil(deepest)));
  m.cleanup();
});

test("at 800 px every column shows; narrower, buffers and kind fold behind the picker first", async () => {
  const m = mount(fixture("memory_ledger"));
  await tick(30);
  m.resize(798); // JupyterLab's 800 px output less the widget's border
  await tick(30);
  assert.deepEqual(m.headers(), ["label", "kind", "arrays", "bytes", "shared"]);
  const minWidth = Number.parseInt(m.el.querySelector("table").style.minWidth, 10);
  assert.ok(minWidth <= 798 - TABLE_CHROME, `${minWidth}`);
  m.resize(640);
  await tick(30);
  assert.deepEqual(m.headers(), ["label", "bytes", "shared"]);
  m.resize(420);
  await tick(30);
  assert.deepEqual(m.headers(), ["label", "bytes"]);
  m.cleanup();
});

test("an empty ledger says so", async () => {
  const m = mount({
    title: "nnx_lab.memory: 0 B in 0 live buffers",
    rows: [],
    devices: [],
    freeing: [],
    empty: "(no live array is held)",
  });
  await tick(30);
  assert.equal(m.el.querySelector(".nnx-empty").textContent, "(no live array is held)");
  assert.ok(m.el.querySelector(".nnx-mem-free").hidden);
  m.cleanup();
});
