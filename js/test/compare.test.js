// The comparison widget rendered into a fake DOM with a fake anywidget model.
import test from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";
import { flatten, matchRows, nextSort, prepare, defaultOpen } from "../src/compare/data.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);

const { default: widget } = await import("../src/compare.js");

const SCRIPT = "<script>alert(1)</script>";

function row(path, module, status, rel, extra = {}) {
  const key = path.split(".").pop();
  return {
    path,
    path_b: null,
    key,
    module,
    layer: null,
    layer_of: -1,
    depth: path.split(".").length - 1,
    status,
    mismatch: null,
    type_a: "Param",
    type_b: "Param",
    shape_a: [2, 3],
    shape_b: [2, 3],
    dtype_a: "float32",
    dtype_b: "float32",
    size: 6,
    rel_change: rel,
    max_abs: rel,
    cosine: rel === null ? null : 1 - rel,
    frac_changed: rel ? 1 : 0,
    identical: rel === 0,
    note: null,
    ...extra,
  };
}

function payload() {
  const agg = (path, key, rel) => ({
    path,
    key,
    parent: -1,
    depth: 0,
    count: 2,
    changed: rel ? 1 : 0,
    size: 12,
    rel_change: rel,
    max_abs: rel,
    cosine: 1,
    frac_changed: 0.5,
    identical: !rel,
  });
  return {
    verdict: "b loads into a: 1 missing, 0 unexpected, 0 shape mismatches; values: 2 identical, 1 changed",
    a_type: "Model",
    b_type: SCRIPT,
    tol: 0,
    loadable: false,
    identical: false,
    counts: { changed: 1, identical: 2, missing: 1 },
    statuses: { identical: "bit for bit the same", changed: "some elements differ", missing: "in a only" },
    modules: [agg("enc", "enc", 0), agg("dec", "dec", 0.25)],
    rows: [
      row("dec.kernel", 1, "changed", 0.25),
      row("dec.bias", 1, "identical", 0),
      row("enc.kernel", 0, "identical", 0),
      row(`enc.${SCRIPT}`, 0, "missing", null, { key: SCRIPT, shape_b: null, dtype_b: null, note: SCRIPT }),
    ],
  };
}

function mount(data) {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const model = new FakeModel({ comparison: data });
  const cleanup = widget.render({ model, el });
  const q = (sel) => el.querySelectorAll(sel);
  const paths = () => q("tr[data-path]").map((t) => t.getAttribute("data-path"));
  return { doc, el, model, cleanup, q, paths };
}

test("verdict on top, problems first, then the largest change; modules carry their aggregates", () => {
  const { q, paths, cleanup } = mount(payload());
  const verdict = q(".nnx-cmp-verdict")[0];
  assert.ok(verdict.textContent.includes(`Model vs ${SCRIPT}: b loads into a: 1 missing`), verdict.textContent);
  assert.ok(verdict.getAttribute("class").includes("bad"));
  // enc holds the missing row (a problem): it comes first, its missing row first inside it.
  assert.deepEqual(paths(), ["enc", `enc.${SCRIPT}`, "enc.kernel", "dec", "dec.kernel", "dec.bias"]);
  const missing = q("tr.nnx-cmp-row.problem")[0];
  assert.equal(missing.getAttribute("data-status"), "missing");
  assert.ok(missing.textContent.includes(SCRIPT)); // as text: the fake DOM throws on any HTML parsing
  const widths = q("span.nnx-cmp-bar").map((b) => b.children[0].getAttribute("style"));
  // enc, enc.kernel (0: an empty track), dec and dec.kernel (the largest: full), dec.bias
  assert.deepEqual(widths, ["width:0.0%", "width:0.0%", "width:100.0%", "width:100.0%", "width:0.0%"]);
  cleanup();
});

test("changed only, a status chip and the path filter; header sort; collapse", () => {
  const { el, q, paths, cleanup } = mount(payload());
  const box = q("input.nnx-cmp-changed")[0];
  box.checked = true;
  box.dispatch("change");
  assert.deepEqual(paths(), ["enc", `enc.${SCRIPT}`, "dec", "dec.kernel"]);
  assert.equal(q(".nnx-cmp-showing")[0].textContent, "2 of 4 Variables");
  box.checked = false;
  box.dispatch("change");
  const chip = q("button[data-status='identical']")[0];
  chip.dispatch("click");
  assert.deepEqual(paths(), ["enc", "enc.kernel", "dec", "dec.bias"]);
  q("button[data-status='identical']")[0].dispatch("click"); // again: every status
  const th = q("th[data-col=rel_change]")[0];
  th.dispatch("click"); // largest relative change first, problems no longer on top
  assert.deepEqual(paths().slice(0, 2), ["dec", "dec.kernel"]);
  const enc = q("tr[data-path=enc]")[0];
  enc.dispatch("click"); // closed: its rows go
  assert.ok(!paths().includes("enc.kernel"));
  cleanup();
  void el;
});

test("data: sort cycle, filters and collapsed modules", () => {
  const prep = prepare(payload());
  assert.deepEqual(nextSort(null, "rel_change"), { column: "rel_change", dir: "desc" });
  assert.deepEqual(nextSort({ column: "rel_change", dir: "desc" }, "rel_change"), { column: "rel_change", dir: "asc" });
  assert.equal(nextSort({ column: "rel_change", dir: "asc" }, "rel_change"), null);
  const open = defaultOpen(prep);
  open.fill(0);
  assert.deepEqual(flatten(prep, open, null, null), [0, 1]);
  const asc = flatten(prep, defaultOpen(prep), { column: "path", dir: "asc" }, null).map((id) =>
    id < 2 ? prep.modules[id].path : prep.rows[id - 2].path,
  );
  assert.deepEqual(asc, ["dec", "dec.bias", "dec.kernel", "enc", `enc.${SCRIPT}`, "enc.kernel"]);
  assert.equal(matchRows(prep, {}), null);
  assert.deepEqual([...matchRows(prep, { query: "KERNEL" })], [1, 0, 1, 0]);
  assert.equal(prepare(null).R, 0);
});

test("viewer's compare-to: the since values join the payload only when they fit its rows", async () => {
  const { withSince } = await import("../src/viewer/baseline.js");
  const snap = { rows: { parent: [0, 0] }, stats: { norm: [1, 2] } };
  assert.deepEqual(withSince(snap, { values: [0.5, null] }).stats, { norm: [1, 2], since: [0.5, null] });
  assert.equal(withSince(snap, { values: [0.5] }), snap); // another structure: not shown
  assert.equal(withSince(snap, null), snap);
});

test("viewer's compare-to: the menu shows a baseline pinned from Python, not 'nothing'", async () => {
  const { FakeDocument } = await import("./fakedom.js");
  const { createBaselineBar } = await import("../src/viewer/baseline.js");
  const { MSG } = await import("../src/shared/constants.js");
  const bar = createBaselineBar(new FakeDocument(), { onPin() {} });
  const choice = bar.el.querySelector(".nnx-baseline-choice");
  const pathBox = bar.el.querySelector(".nnx-baseline-path");
  const label = "\u2265 |\u0394\u2016\u03b8\u2016|/\u2016\u03b8\u2080\u2016 since refresh 1 (statistics)";
  bar.show({ type: MSG.SINCE, values: [0], baseline: { kind: "stats", label } }); // viewer.compare_to("stats")
  assert.equal(choice.value, "stats");
  assert.ok(bar.el.querySelector(".nnx-baseline-label").textContent.includes("since refresh 1"));
  bar.show({ type: MSG.SINCE, values: [0], baseline: { kind: "checkpoint", label: "x", path: "/ckpt/7" } });
  assert.equal(choice.value, "path");
  assert.equal(pathBox.hidden, false);
  assert.equal(pathBox.value, "/ckpt/7");
  bar.show({ type: MSG.SINCE, values: [0], baseline: { kind: "snapshot", label: "against a snapshot" } });
  assert.equal(choice.value, "snapshot");
  bar.show({ type: MSG.SINCE, values: null, baseline: null }); // viewer.compare_to(None)
  assert.equal(choice.value, "none");
  assert.equal(pathBox.hidden, true);
});

test("a relative change JSON cannot carry (inf: a all zeros) shows Python's text and why", () => {
  const data = payload();
  const why = "\u2016a\u2212b\u2016/\u2016a\u2016 = inf: a is all zeros here";
  data.rows[1] = row("dec.bias", 1, "changed", null, { rel_change_text: "inf", rel_change_title: why, max_abs: 0.5 });
  const { q, cleanup } = mount(data);
  const bias = q("tr[data-path]").find((t) => t.getAttribute("data-path") === "dec.bias");
  const cell = bias.querySelector("td.c-rel_change");
  assert.equal(cell.textContent, "inf");
  assert.equal(cell.getAttribute("title"), why);
  cleanup();
});

test("an inf relative change (a zero bias that changed) sorts as the largest change, not as none", () => {
  const data = payload();
  data.rows[1] = row("dec.bias", 1, "changed", null, { rel_change_text: "inf", max_abs: 0.5 });
  const { q, paths, cleanup } = mount(data);
  const biasFirst = () => paths().indexOf("dec.bias") < paths().indexOf("dec.kernel");
  assert.ok(biasFirst(), paths().join()); // the default order: largest change first
  q("th[data-col=rel_change]")[0].dispatch("click"); // largest first
  assert.ok(biasFirst(), paths().join());
  q("th[data-col=rel_change]")[0].dispatch("click"); // smallest first
  assert.ok(!biasFirst(), paths().join());
  cleanup();
});
