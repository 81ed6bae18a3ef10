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
  bad_leaves: [],
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

test("a new payload redraws; an input verdict lists its leaves and draws no call table", () => {
  const { el, model, cleanup } = mount(PAYLOAD);
  model.set("report", {
    verdict: "the NaN/Inf values were already in fn's arguments:",
    direction: "input",
    lines: [],
    bad: [],
    bad_leaves: ["args[1][0, 3]"],
    rows: [],
    note: "",
  });
  assert.equal(el.querySelector(".nnx-nf-verdict").getAttribute("data-direction"), "input");
  assert.deepEqual(
    el.querySelectorAll(".nnx-nf-leaf").map((n) => n.textContent),
    ["args[1][0, 3]"],
  );
  assert.equal(el.querySelectorAll("tr.nnx-nf-call").length, 0);
  cleanup();
  model.set("report", { ...PAYLOAD, verdict: "after cleanup" });
  assert.notEqual(el.querySelector(".nnx-nf-verdict").textContent, "after cleanup");
});

test("an input verdict: the described leaves in the bad table, the rest by name", () => {
  const { el, cleanup } = mount({
    verdict: "the NaN/Inf values were already in fn's arguments:",
    direction: "input",
    lines: [],
    bad: [
      { name: "args[0].kernel", nan: "1", inf: "2", first: "(0, 0)" },
      { name: "args[1]", nan: "3", inf: "0", first: "(5, 1)" },
    ],
    bad_leaves: ["args[0].kernel", "args[1]", "args[2]"],
    rows: [],
    bad_caption: "bad elements",
    note: "",
  });
  const table = el.querySelector("table.nnx-nf-bad");
  const rows = table
    .querySelector("tbody")
    .querySelectorAll("tr")
    .map((tr) => tr.textContent);
  assert.deepEqual(rows, ["args[0].kernel12(0, 0)", "args[1]30(5, 1)"]);
  assert.deepEqual(
    el.querySelectorAll(".nnx-nf-leaf").map((n) => n.textContent),
    ["args[2]"],
  );
  cleanup();
});
