// Mount the view panel into a fake DOM with a fake anywidget model, with helpers to find its parts.
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";

const { default: widget } = await import("../src/views.js");

export const SCRIPT = "<script>alert(1)</script>";
export const IMG = "<img src=x onerror=alert(1)>";

export function mount(payload) {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const model = new FakeModel({ payload });
  const cleanup = widget.render({ model, el });
  const q = (sel) => el.querySelectorAll(sel);
  const one = (sel) => {
    const found = q(sel);
    assert.equal(found.length, 1, `${sel}: ${found.length} found`);
    return found[0];
  };
  const control = (name) => one(".nnx-views-controls").querySelectorAll(`[data-arg=${name}]`)[0] || null;
  const row = (path) => q("tr.nnx-views-instance").find((t) => t.getAttribute("data-path") === path);
  const group = (name) => q("section.nnx-views-class").find((s) => s.getAttribute("data-class") === name);
  const ack = (id, state, text = "", code = "") => model.emit("msg:custom", { type: "ack", id, state, text, code });
  const disabled = (b) => b.getAttribute("disabled") !== null;
  return { doc, el, model, cleanup, q, one, control, row, group, ack, disabled };
}
