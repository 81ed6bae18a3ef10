// The summary widget's tooltips. The FLOPs cell: a figure that includes random-bit generation (a Dropout's mask)
// says so in its tooltip, with Python's words (flops_note), so it does not look like a bug.
import test from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);
const tick = (ms = 10) => new Promise((r) => setTimeout(r, ms));

const { default: widget } = await import("../src/summary.js");

const NOTE = "789 of these 1,030 FLOPs generate random bits (jax.random's threefry hash, e.g. a Dropout's mask)";
const row = (path_text, depth, flops, note = "") => ({
  path_text,
  depth,
  cls: "X",
  flops,
  flops_text: note ? `${flops}*` : String(flops),
  flops_exact: flops.toLocaleString("en-US"),
  flops_note: note,
  params: 0,
});

test("the FLOPs cell of a row with random-bit generation says why in its tooltip", async () => {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const summary = {
    title: "Sequential.__call__ on cpu",
    header: ["FLOPs 1246 forward", "* includes random-bit generation"],
    rows: [row("(Sequential)", 0, 1246, NOTE), row("lin", 1, 216), row("drop", 1, 1030, NOTE)],
    total_flops: 1246,
    backward: false,
  };
  const model = new FakeModel({ summary });
  const cleanup = widget.render({ model, el });
  await tick(30);
  const cells = el.querySelectorAll("td.c-flops");
  assert.equal(cells.length, 3);
  const drop = cells.find((c) => c.textContent.startsWith("1030"));
  assert.ok(drop.getAttribute("title").endsWith(`; ${NOTE}`), drop.getAttribute("title"));
  const lin = cells.find((c) => c.textContent.startsWith("216"));
  assert.ok(!lin.getAttribute("title").includes("random"), lin.getAttribute("title"));
  assert.ok(el.textContent.includes("* includes random-bit generation")); // the footnote in the header
  if (typeof cleanup === "function") cleanup();
});

test("the params cell counts parameters and its tooltip lists every Variable type", async () => {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const bn = {
    ...row("bn", 1, 885),
    params: 128,
    params_text: "128 (512 B)",
    params_title: "Param 128 (512 B), BatchStat 128 (512 B)",
  };
  const drop = { ...row("drop", 1, 0), params: 0, params_text: "", params_title: "RngKey 1 (8 B), RngCount 1 (4 B)" };
  const summary = {
    title: "Net.__call__ on cpu",
    header: ["FLOPs 885 forward"],
    rows: [{ ...row("(Net)", 0, 885), params: 128, params_text: "128 (512 B)" }, bn, drop],
    total_flops: 885,
    backward: false,
  };
  const cleanup = widget.render({ model: new FakeModel({ summary }), el });
  await tick(30);
  const [, bnCell, dropCell] = el.querySelectorAll("td.c-params");
  assert.equal(bnCell.textContent, "128 (512 B)");
  assert.equal(bnCell.getAttribute("title"), "Param 128 (512 B), BatchStat 128 (512 B)");
  assert.equal(dropCell.textContent, "");
  assert.equal(dropCell.getAttribute("title"), "RngKey 1 (8 B), RngCount 1 (4 B)");
  if (typeof cleanup === "function") cleanup();
});
