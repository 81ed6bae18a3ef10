// Series beside the rows (gradients, optimizer state) in the viewer, from a real Python payload.
import nodeTest from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";
import { fixture, testWith } from "./generated.js";
import { displayed, readSeries } from "../src/viewer/series.js";
import { hiddenColumns } from "../src/shared/columns.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);
const tick = (ms = 10) => new Promise((r) => setTimeout(r, ms));
const test = testWith(nodeTest, "viewer_series");
const { default: widget } = await import("../src/viewer.js");

function mount(payload) {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const model = new FakeModel({ snapshot: payload.snapshot, status: payload.status, sparkline_stat: "norm" });
  const cleanup = widget.render({ model, el });
  const q = (sel) => el.querySelectorAll(sel);
  const row = (path) => q("tr[data-path]").find((t) => t.getAttribute("data-path") === path);
  return { el, model, q, row, cleanup };
}

test("series are read from the trait and from the stats message's second buffer alike", () => {
  const p = fixture("viewer_series");
  const R = p.snapshot.rows.parent.length;
  const fromTrait = readSeries(p.snapshot.series, p.snapshot.series.values, R);
  const fromMsg = readSeries(
    p.stats_message.series,
    Float32Array.from(p.series_values, (v) => v ?? NaN),
    R,
  );
  assert.deepEqual(fromTrait.names, ["grad", "mu", "nu"]);
  for (const name of fromTrait.names) {
    for (const stat of ["mean", "norm", "nan_count"]) {
      fromTrait.stats[name][stat].forEach((v, r) => {
        const w = fromMsg.stats[name][stat][r];
        if (v === null) assert.equal(w, null);
        else assert.ok(Math.abs(v - w) <= Math.abs(v) * 1e-6, `${name} ${stat} ${r}`);
      });
    }
  }
  assert.equal(fromTrait.optStep, 1);
  // Adam's count is the optimizer step; the injected hyperparameters are leaves matched to no Variable.
  assert.ok(fromTrait.unmatched.some((u) => u.path === "hyperparams.learning_rate"));
  assert.ok(!fromTrait.unmatched.some((u) => u.path.endsWith("count")));
  // The ratio column is ‖g‖ / ‖θ‖ of the same row.
  const shown = displayed({ ...p.snapshot, seriesData: fromTrait }, "");
  shown.stats.g_ratio.forEach((v, r) => {
    const want = shown.stats.g_norm[r] / p.snapshot.stats.norm[r];
    assert.ok(Math.abs(v - want) <= want * 1e-3, `row ${r}: ${v} vs ${want}`);
  });
  assert.equal(hiddenColumns(shown).has("g_norm"), false);
  assert.equal(hiddenColumns(p.snapshot).has("g_norm"), true); // no series: no gradient columns
});

test("the viewer shows gradient columns, the optimizer step, unmatched leaves, and a series' statistics on demand", async () => {
  const p = fixture("viewer_series");
  const { q, row, cleanup } = mount(p);
  const kernel = () => row("layers[0].kernel");
  const R = p.snapshot.rows.parent.length;
  const series = readSeries(p.snapshot.series, p.snapshot.series.values, R);
  const r = p.snapshot.rows.key.findIndex(
    (k, i) => k === "kernel" && p.snapshot.nodes.key[p.snapshot.rows.parent[i]] === 0,
  );
  assert.ok(r >= 0);
  assert.equal(q("th[data-col=g_norm]").length, 1);
  assert.equal(q("table")[0].classList.contains("hide-g_norm"), false);
  assert.ok(kernel().querySelector("td.c-g_norm").textContent.length > 0);
  assert.ok(q(".nnx-series-line")[0].textContent.includes("optimizer step 1"));
  assert.ok(q(".nnx-unmatched")[0].textContent.includes("hyperparams.learning_rate"));
  const paramMean = kernel().querySelector("td.c-mean").textContent;
  const select = q("select.nnx-group")[0];
  assert.deepEqual(
    select.querySelectorAll("option").map((o) => o.getAttribute("value")),
    ["", "grad", "mu", "nu"],
  );
  select.value = "mu";
  select.dispatch("change");
  await tick(20);
  const muMean = kernel().querySelector("td.c-mean").textContent;
  assert.notEqual(muMean, paramMean);
  assert.equal(Number(muMean), Number(series.stats.mu.mean[r].toPrecision(4)));
  cleanup();
});

nodeTest("an update series gives the ‖Δθ‖/‖θ‖ column, its staleness and the problems in the series line", async () => {
  const stats = ["mean", "norm"];
  const R = 2;
  // [series, stats + ratio, rows]: update norm 0.01, 0.02; ratio 1e-3, 2e-3
  const values = [null, null, 0.01, 0.02, 1e-3, 2e-3];
  const series = readSeries(
    {
      names: ["update"],
      stats,
      steps: { update: 7 },
      stale: ["update"],
      unmatched: [],
      problems: ["update: unavailable (donated): <b>x</b>"],
      opt_step: null,
    },
    values,
    R,
  );
  const shown = displayed({ stats: { norm: [10, 10] }, seriesData: series }, "");
  assert.deepEqual(shown.stats.u_ratio, [1e-3, 2e-3]);
  assert.equal(shown.stats.g_norm, undefined);
  assert.deepEqual(displayed({ stats: {}, seriesData: series }, "update").stats.norm, [0.01, 0.02]);
  const { FakeDocument } = await import("./fakedom.js");
  const { createSeriesBar } = await import("../src/viewer/series.js");
  const doc = new FakeDocument();
  const bar = createSeriesBar(doc, { onGroup() {} });
  bar.fill({ seriesData: series }, "");
  const line = bar.el.querySelectorAll(".nnx-series-line")[0];
  assert.ok(line.textContent.includes("update from step 7 (none since)"));
  assert.ok(line.textContent.includes("<b>x</b>")); // text, never HTML
  assert.equal(line.querySelectorAll("b").length, 0);
});

nodeTest("a stale update says what Python says came after it, not always 'none since'", async () => {
  const since = "computed at the step after a refresh only, every 10 steps";
  const meta = {
    names: ["update"],
    stats: ["norm"],
    steps: { update: 34 },
    stale: ["update"],
    since: { update: since },
  };
  const series = readSeries({ ...meta, unmatched: [], problems: [], opt_step: null }, [0.01, 1e-3], 1);
  const { createSeriesBar } = await import("../src/viewer/series.js");
  const bar = createSeriesBar(new FakeDocument(), { onGroup() {} });
  bar.fill({ seriesData: series }, "");
  const line = bar.el.querySelectorAll(".nnx-series-line")[0].textContent;
  assert.ok(line.includes(`update from step 34 (${since})`), line);
  assert.ok(!line.includes("none since"), line);
});

test("a stale gradient's cell keeps its number on hover, beside the step it is from", () => {
  // flax's translation Transformer: a key bias's ‖grad‖ 1.194e-10 is cut to "1.194e…" in a narrow
  // column; the stale cell's own title (which the hover keeps) must still say the number
  const p = fixture("viewer_series");
  const stale = { ...p.snapshot.series, stale: ["grad"], since: { grad: "none since" } };
  const { row, cleanup } = mount({ ...p, snapshot: { ...p.snapshot, series: stale } });
  const cell = row("layers[0].kernel").querySelector("td.c-g_norm");
  assert.ok(cell.classList.contains("stale"));
  const shown = cell.textContent;
  assert.ok(shown.length > 0);
  assert.equal(cell.getAttribute("title"), `${shown} \u00b7 grad from step 1 (none since)`);
  cleanup();
});

test("a series number float32 cannot carry (a gradient's norm beyond its range) reads exact from meta.exact", () => {
  // One series (grad) over two rows; its norm at row 1 is 8e38: +Infinity in the float32 buffer.
  const stats = ["mean", "norm"];
  const values = Float32Array.from([1, 1e38, 2, Infinity, 0.5, Infinity]);
  const meta = {
    names: ["grad"],
    stats,
    exact: [
      [0, 1, 1, 8e38],
      [0, 2, 1, 8e38],
    ],
  };
  const s = readSeries(meta, values, 2);
  assert.equal(s.stats.grad.norm[1], 8e38);
  assert.equal(s.ratio.grad[1], 8e38);
  assert.equal(s.stats.grad.norm[0], 2);
  assert.equal(s.stats.grad.mean[1], 1e38 === Math.fround(1e38) ? 1e38 : Math.fround(1e38));
  // Without it (an older kernel's payload) the buffer's value is read as before.
  assert.equal(readSeries({ names: ["grad"], stats }, values, 2).stats.grad.norm[1], Infinity);
});
