// The view panel at scale, with hostile strings, after cleanup, and without subshells.
import nodeTest from "node:test";
import assert from "node:assert/strict";
import { testWith } from "./generated.js";
import { FakeDocument, FakeModel } from "./fakedom.js";
import { evalMode, many, mixed } from "./viewsfixtures.js";
import { IMG, SCRIPT, mount } from "./viewsmount.js";

const { default: widget } = await import("../src/views.js");
const test = testWith(nodeTest, "views_mixed", "views_eval");

test("a 3 000-instance model lists 50 rows and a show-more button", () => {
  const { one, q, group, row, model, cleanup } = mount(many(3000));
  assert.equal(q("tr.nnx-views-instance").length, 50);
  assert.equal(one("select.nnx-views-scope").querySelectorAll("option").length, 302);
  const more = one("button.nnx-views-more");
  assert.equal(more.textContent, "show 500 more (50 of 3000 listed)");
  more.dispatch("click");
  assert.equal(q("tr.nnx-views-instance").length, 550);
  row("layers[549]").dispatch("click");
  assert.equal(one("select.nnx-views-scope").value, "i:0:549");
  const options = one("select.nnx-views-scope").querySelectorAll("option");
  assert.equal(options.length, 303); // past the cap of 300: its own option
  assert.equal(options.at(-1).getAttribute("value"), "i:0:549");
  assert.equal(options.at(-1).getAttribute("selected"), "");
  model.set("payload", many(3000)); // a refresh keeps what was listed and selected
  assert.equal(q("tr.nnx-views-instance").length, 550);
  assert.equal(row("layers[549]").getAttribute("aria-selected"), "true");
  assert.equal(
    group("Dropout").querySelector("button.nnx-views-more").textContent,
    "show 500 more (550 of 3000 listed)",
  );
  cleanup();
});

test("user strings stay text (XSS): class, path, doc, annotation, values, root, summary, message", () => {
  const p = mixed();
  p.root = IMG;
  p.target = SCRIPT;
  p.summary = `${IMG} summary`;
  p.message = `${SCRIPT} message`;
  p.disagreeing = [`layers['${IMG}']`];
  const c = p.classes.find((k) => k.class === "BatchNorm");
  c.class = IMG;
  c.only = `nnx.${IMG}`;
  c.args[0].doc = `${SCRIPT} doc`;
  c.args[0].annotation = IMG;
  c.args[0].default = SCRIPT;
  c.instances[0].path = `layers['${IMG}']`;
  c.instances[0].values.use_running_average = SCRIPT;
  const { doc, el, one, q, row, group, control, cleanup } = mount(p);
  assert.equal(one(".nnx-views-head").querySelector(".root").textContent, IMG);
  assert.equal(one(".nnx-views-message").textContent, `${SCRIPT} message`);
  assert.ok(one(".nnx-views-mixed").textContent.includes(`layers['${IMG}'] (eval)`));
  const g = group(IMG);
  assert.equal(g.querySelector(".nnx-views-class-head").querySelector(".name").textContent, IMG);
  assert.equal(row(`layers['${IMG}']`).querySelector("td[data-arg=use_running_average]").textContent, SCRIPT);
  g.querySelector("div.nnx-views-class-head").dispatch("click");
  const help = q(".nnx-views-arg")[0].querySelector(".help");
  assert.equal(help.textContent, `${SCRIPT} doc`);
  assert.equal(control("use_running_average").querySelectorAll("button").length, 3);
  control("use_running_average").querySelector("button[data-value=true]").dispatch("click");
  assert.equal(
    one(".nnx-views-code[data-action=apply]").textContent,
    `${SCRIPT}.set_attributes(nnx.${IMG}, use_running_average=True)`,
  );
  assert.ok(
    one("select.nnx-views-scope")
      .querySelectorAll("option")
      .some((o) => o.textContent === `${IMG} (1)`),
  );
  for (const tag of ["script", "img"]) {
    assert.ok(!doc.calls.some((x) => x[0] === "createElement" && x[1] === tag), tag);
  }
  assert.equal(el.querySelectorAll("img").length + el.querySelectorAll("script").length, 0);
  cleanup();
});

test("cleanup stops listening to the model", () => {
  const { model, one, cleanup } = mount(mixed());
  cleanup();
  assert.equal((model.handlers["change:payload"] || []).length, 0);
  assert.equal((model.handlers["msg:custom"] || []).length, 0);
  model.set("payload", evalMode()); // no effect, no error
  assert.equal(one(".nnx-views-mode").textContent, "mixed");
});

test("without subshells (Colab, ipykernel < 7) a pending click says it waits for the running cell", () => {
  const note = "waiting for the running cell to end (this kernel reads clicks only between cells)";
  for (const [busyNote, expected] of [
    [note, note],
    ["", "waiting for the kernel"],
  ]) {
    const doc = new FakeDocument();
    const el = doc.createElement("div");
    const model = new FakeModel({ payload: evalMode(), busy_note: busyNote });
    const cleanup = widget.render({ model, el });
    el.querySelectorAll('button[data-mode="train"]')[0].dispatch("click");
    const status = el.querySelectorAll(".nnx-views-status")[0];
    assert.equal(status.getAttribute("data-state"), "pending");
    assert.ok(status.textContent.endsWith(`pending\u2026 ${expected}`), status.textContent);
    cleanup();
  }
});
