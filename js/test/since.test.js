// The viewer's "since" column (compare to a baseline): a row whose shape differs from the
// baseline's says "shape" (not compared, as compare() refuses it), the others their change.
import test from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";
import { sequential } from "./fixtures.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);
const tick = (ms = 10) => new Promise((r) => setTimeout(r, ms));

const { default: widget } = await import("../src/viewer.js");

test("a since value of 'shape' is shown as that status, not as a number", async () => {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const snapshot = sequential();
  const model = new FakeModel({ snapshot, status: { state: "live", message: "" }, sparkline_stat: "norm" });
  const cleanup = widget.render({ model, el });
  const paths = snapshot.rows.parent.map((_, i) => i);
  const values = paths.map((i) => (i === 0 ? "shape" : 0.25));
  model.emit("msg:custom", { type: "since", values, baseline: { kind: "snapshot", label: "against a snapshot" } }, []);
  await tick(30);
  const cells = el.querySelectorAll("td.c-since");
  assert.ok(cells.length >= 2, `since cells: ${cells.length}`);
  const shape = cells.filter((c) => c.textContent === "shape");
  assert.equal(shape.length, 1);
  assert.ok(shape[0].getAttribute("class").includes("bad"));
  assert.ok(shape[0].getAttribute("title").includes("shape differs"));
  assert.ok(cells.some((c) => c.textContent === "0.25"));
  cleanup();
});
