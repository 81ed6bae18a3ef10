// The non-finite report widget on a real payload (Python's NonfiniteReport.payload(), one hostile path):
// the verdict, the primitive and source lines, the bad counts, the calls on the path with the
// culprit marked, every user string as text; a changed payload redraws; an input verdict lists leaves.
import test from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";

const { default: widget } = await import("../src/nonfinite.js");
const PAYLOAD = {
  verdict: "the forward pass first produced NaN/Inf in blocks.2 (Block.__call__)",
  direction: "forward",
  lines: ["primitive: log", "source: model.py:16 (Block.__call__)"],
  bad: [
    {
      name: "out",
      nan: "15",
      inf: "0",
      first: "(0, 0)",
    },
  ],
  bad_columns: [
    ["name", "value"],
    ["nan", "NaN"],
    ["inf", "Inf"],
    ["first", "first bad at"],
  ],
  rows: [
    {
      path: "<img src=x onerror=alert(1)>",
      call: "Stack.__call__",
      inputs: "[0]: (4, 8) float32  min -1  max 1  mean -2.98e-8",
      outputs: "out: (4, 1) float32  no finite value  NaN 4  Inf 0  first bad at (0, 0)",
      variables: "",
      culprit: false,
    },
    {
      path: "blocks.2",
      call: "Block.__call__",
      inputs: "[0]: (4, 8) float32  min -2.289  max 2.45  mean 0.08126",
      outputs: "out: (4, 8) float32  min -3.195  max 1.671  mean -0.3132  NaN 15  Inf 0  first bad at (0, 0)",
      variables: "",
      culprit: true,
    },
  ],
  note: "",
};

function mount(report) {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const model = new FakeModel({ report });
  const cleanup = widget.render({ model, el });
  return { doc, el, model, cleanup };
}

test("the verdict, primitive, source, bad counts and the path's calls are drawn from Python's text", () => {
  const { el } = mount(PAYLOAD);
  const verdict = el.querySelector(".nnx-nf-verdict");
  assert.equal(verdict.textContent, "the forward pass first produced NaN/Inf in blocks.2 (Block.__call__)");
  assert.equal(verdict.getAttribute("data-direction"), "forward");
  assert.deepEqual(
    el.querySelectorAll(".nnx-nf-line").map((n) => n.textContent),
    ["primitive: log", "source: model.py:16 (Block.__call__)"],
  );
  const bad = el
    .querySelector("table.nnx-nf-bad")
    .querySelector("tbody")
    .querySelectorAll("td")
    .map((n) => n.textContent);
  assert.deepEqual(bad, ["out", "15", "0", "(0, 0)"]);
  const calls = el.querySelectorAll("tr.nnx-nf-call");
  assert.equal(calls.length, 2);
  const culprit = el.querySelector("tr.culprit");
  assert.equal(culprit.querySelectorAll("td")[0].textContent, "blocks.2");
  assert.equal(culprit.querySelectorAll("td")[1].textContent, "Block.__call__");
  assert.match(culprit.querySelectorAll("td")[3].textContent, /NaN 15 {2}Inf 0 {2}first bad at \(0, 0\)/);
});

test("user strings are text, never HTML", () => {
  const { el, doc } = mount(PAYLOAD);
  assert.equal(el.querySelectorAll("tr.nnx-nf-call")[0].querySelectorAll("td")[0].textContent, PAYLOAD.rows[0].path);
  assert.equal(el.querySelectorAll("img").length, 0);
  assert.ok(!doc.calls.some(([kind]) => /HTML/i.test(kind)));
});

// Python's payload for an Inf in a kernel, NaN in the batch and a hostile keyword's -Inf (then one
// "and N more" line, as Python writes it past its first 20 described leaves)
const INPUT = {
  verdict: "the NaN/Inf values were already in fn's arguments:",
  direction: "input",
  lines: ["and 3 more: kwargs['k0'], kwargs['k1'], kwargs['k2']"],
  bad: [
    {
      name: "args[0].blocks[1].linear.kernel",
      array: "(8, 8) float32",
      bad: "1 of 64",
      nan: "0",
      posinf: "1",
      neginf: "0",
      first: "(0, 3)",
      finite: "min -0.6136  max 0.6913  mean 0.0461",
    },
    {
      name: "args[1]",
      array: "(4, 8) float32",
      bad: "1 of 32",
      nan: "1",
      posinf: "0",
      neginf: "0",
      first: "(1, 2)",
      finite: "min -1  max 1  mean 0.01145",
    },
    {
      name: "kwargs['<img src=x onerror=alert(1)>']",
      array: "(3,) float32",
      bad: "3 of 3",
      nan: "0",
      posinf: "0",
      neginf: "3",
      first: "(0,)",
      finite: "no finite value",
    },
  ],
  bad_columns: [
    ["name", "argument"],
    ["array", "array"],
    ["bad", "bad"],
    ["nan", "NaN"],
    ["posinf", "+Inf"],
    ["neginf", "-Inf"],
    ["first", "first bad at"],
    ["finite", "finite values"],
  ],
  rows: [],
  bad_caption: "bad elements",
  note: "",
};

test("a new payload redraws: an input verdict's table has Python's columns and cells, no call table", () => {
  const { el, model, doc, cleanup } = mount(PAYLOAD);
  model.set("report", INPUT);
  assert.equal(el.querySelector(".nnx-nf-verdict").getAttribute("data-direction"), "input");
  const table = el.querySelector("table.nnx-nf-bad.nnx-nf-input");
  assert.deepEqual(
    table.querySelectorAll("th").map((n) => n.textContent),
    ["argument", "array", "bad", "NaN", "+Inf", "-Inf", "first bad at", "finite values"],
  );
  const rows = table
    .querySelector("tbody")
    .querySelectorAll("tr")
    .map((tr) => tr.querySelectorAll("td").map((td) => td.textContent));
  assert.deepEqual(rows[0], [
    "args[0].blocks[1].linear.kernel",
    "(8, 8) float32",
    "1 of 64",
    "0",
    "1",
    "0",
    "(0, 3)",
    "min -0.6136  max 0.6913  mean 0.0461",
  ]);
  assert.deepEqual(rows[1].slice(0, 7), ["args[1]", "(4, 8) float32", "1 of 32", "1", "0", "0", "(1, 2)"]);
  assert.equal(rows[2][0], "kwargs['<img src=x onerror=alert(1)>']"); // text, never HTML
  assert.equal(el.querySelectorAll("img").length, 0);
  assert.ok(!doc.calls.some(([kind]) => /HTML/i.test(kind)));
  assert.deepEqual(
    el.querySelectorAll(".nnx-nf-line").map((n) => n.textContent),
    ["and 3 more: kwargs['k0'], kwargs['k1'], kwargs['k2']"],
  );
  // the line counting the rest follows the table; the columns are given their widths
  const panel = el.querySelector(".nnx-lab-nonfinite-view").childNodes.map((n) => n.tagName);
  assert.deepEqual(panel.slice(-2), ["TABLE", "DIV"]);
  assert.equal(table.querySelectorAll("col").length, 8);
  assert.equal(el.querySelectorAll("tr.nnx-nf-call").length, 0);
  cleanup();
  model.set("report", { ...PAYLOAD, verdict: "after cleanup" });
  assert.notEqual(el.querySelector(".nnx-nf-verdict").textContent, "after cleanup");
});
