// The view panel / mode toggle rendered into a fake DOM with a fake anywidget model.
import nodeTest from "node:test";
import { testWith } from "./generated.js";
import assert from "node:assert/strict";
import { empty, evalMode, mixed } from "./viewsfixtures.js";
import { mount } from "./viewsmount.js";

const test = testWith(nodeTest, "views_mixed", "views_eval", "views_empty");

test("header, mixed warning, listing grouped by class with each instance's mode and values", () => {
  const { el, one, q, row, group, cleanup } = mount(mixed());
  const root = el.children[0];
  assert.ok(root.classList.contains("nnx-lab-views"));
  assert.equal(root.getAttribute("data-variant"), "views");
  assert.equal(one(".nnx-views-head").querySelector(".root").textContent, "Net");
  const badge = one(".nnx-views-mode");
  assert.equal(badge.textContent, "mixed");
  assert.equal(badge.getAttribute("title"), mixed().summary);
  const warn = one(".nnx-views-mixed");
  assert.equal(warn.hidden, false);
  assert.equal(warn.textContent, "Mixed modes: most modules are train; not like them: layers[3] (eval)");
  assert.equal(one(".nnx-views-count").textContent, "4 modules with set_view");
  assert.equal(one("button[data-mode=train]").textContent, "train");
  assert.equal(one("button[data-mode=eval]").getAttribute("aria-pressed"), "false");

  assert.deepEqual(
    q("section.nnx-views-class").map((s) => s.getAttribute("data-class")),
    ["MultiHeadAttention", "Dropout", "BatchNorm"],
  );
  const head = group("MultiHeadAttention").querySelector("div.nnx-views-class-head");
  assert.equal(head.querySelector(".n").textContent, "1 instance");
  assert.equal(
    head.querySelector(".sig").textContent,
    "set_view(deterministic: bool | None = None, decode: bool | None = None, batch_size: int | Shape | None = None, max_length: int | None = None)",
  );
  assert.deepEqual(
    group("Dropout")
      .querySelectorAll("tr.nnx-views-instance")
      .map((t) => t.getAttribute("data-path")),
    ["layers[1]", "layers[4]"],
  );
  const bn = row("layers[3]");
  assert.equal(bn.querySelector(".nnx-views-imode").textContent, "eval");
  assert.equal(bn.querySelector("td[data-arg=use_running_average]").textContent, "True");
  assert.ok(bn.classList.contains("odd-one")); // the disagreeing path is marked
  assert.ok(!row("layers[1]").classList.contains("odd-one"));
  const attn = row("attn");
  assert.equal(attn.querySelector("td[data-arg=decode]").textContent, "False");
  const missing = attn.querySelector("td[data-arg=max_length]");
  assert.equal(missing.textContent, "\u2014");
  assert.ok(missing.classList.contains("missing"));
  assert.equal(one(".nnx-views-message").hidden, true);
  cleanup();
});

test("scope chooser and controls: the union of arguments, one control per kind, help text", () => {
  const p = mixed();
  const mha = p.classes.find((c) => c.class === "MultiHeadAttention");
  mha.args.find((a) => a.name === "max_length").doc = ""; // an argument without help text
  const { one, q, control, group, row, cleanup } = mount(p);
  const select = one("select.nnx-views-scope");
  assert.equal(select.value, "all");
  assert.equal(one(".nnx-views-scope-info").textContent, "3 classes, 4 instances");
  assert.equal(one("select.nnx-views-scope").querySelectorAll("option").length, 8);
  const names = one(".nnx-views-controls")
    .querySelectorAll(".nnx-views-arg")
    .map((d) => d.getAttribute("data-name"));
  assert.deepEqual(names, ["deterministic", "decode", "batch_size", "max_length", "use_running_average"]);
  const det = control("deterministic");
  assert.deepEqual(
    det
      .querySelectorAll("button")
      .map((b) => [b.getAttribute("data-value"), b.textContent, b.getAttribute("aria-pressed")]),
    [
      ["unset", "unset", "true"],
      ["true", "True", "false"],
      ["false", "False", "false"],
    ],
  );
  const detRow = q(".nnx-views-arg").find((d) => d.getAttribute("data-name") === "deterministic");
  assert.equal(detRow.querySelector(".cls").textContent, "MultiHeadAttention, Dropout");
  assert.equal(detRow.querySelector(".help").textContent, mha.args[0].doc); // the first class's text
  assert.equal(control("max_length").tagName, "INPUT");
  assert.equal(control("max_length").getAttribute("inputmode"), "numeric");
  assert.equal(control("batch_size").getAttribute("placeholder"), "None");
  const ml = q(".nnx-views-arg").find((d) => d.getAttribute("data-name") === "max_length");
  assert.equal(ml.querySelector(".help").textContent, "int | None = None"); // no doc: annotation = default

  // a class header click selects that class; its arguments only
  group("BatchNorm").querySelector("div.nnx-views-class-head").querySelector(".name").dispatch("click");
  assert.equal(select.value, "c:2");
  assert.equal(group("BatchNorm").getAttribute("aria-selected"), "true");
  assert.deepEqual(
    q(".nnx-views-arg").map((d) => d.getAttribute("data-name")),
    ["use_running_average"],
  );
  assert.equal(one(".nnx-views-controls").querySelectorAll(".cls").length, 0);
  // an instance row click selects that instance; again: back to all modules
  row("attn").querySelector("td.c-path").dispatch("click");
  assert.equal(select.value, "i:0:0");
  assert.equal(row("attn").getAttribute("aria-selected"), "true");
  assert.equal(group("BatchNorm").getAttribute("aria-selected"), null);
  assert.deepEqual(
    q(".nnx-views-arg").map((d) => d.getAttribute("data-name")),
    ["deterministic", "decode", "batch_size", "max_length"],
  );
  row("attn").dispatch("click");
  assert.equal(select.value, "all");
  assert.equal(row("attn").getAttribute("aria-selected"), null);
  // the select itself
  select.value = "c:1";
  select.dispatch("change");
  assert.deepEqual(
    q(".nnx-views-arg").map((d) => d.getAttribute("data-name")),
    ["deterministic"],
  );
  assert.equal(one(".nnx-views-scope-info").textContent, "2 instances");
  cleanup();
});

test("keyboard: class headers and instance rows are focusable; Enter or Space picks them", () => {
  const { one, row, group, cleanup } = mount(mixed());
  const select = one("select.nnx-views-scope");
  const head = group("BatchNorm").querySelector("div.nnx-views-class-head");
  assert.equal(head.getAttribute("tabindex"), "0");
  assert.equal(row("attn").getAttribute("tabindex"), "0");
  let prevented = false;
  row("attn").dispatch("keydown", {
    key: "Enter",
    preventDefault() {
      prevented = true;
    },
  });
  assert.equal(select.value, "i:0:0");
  assert.ok(prevented); // Space would otherwise scroll the page
  row("attn").dispatch("keydown", { key: "a" });
  assert.equal(select.value, "i:0:0"); // other keys do nothing
  row("attn").dispatch("keydown", { key: " " });
  assert.equal(select.value, "all"); // again: back to all modules
  head.dispatch("keydown", { key: "Enter" });
  assert.equal(select.value, "c:2");
  row("attn").querySelector("td.c-path").dispatch("keydown", { key: "Enter" });
  assert.equal(select.value, "c:2"); // a key on a cell inside is not the row's own
  cleanup();
});

test("tri-state + create view sends the right message; pending until the ack, then the ran line", () => {
  const { model, one, control, group, ack, disabled, cleanup } = mount(mixed());
  const create = one("button.nnx-views-create");
  const apply = one("button.nnx-views-apply");
  const viewCode = one(".nnx-views-code[data-action=view]");
  assert.ok(disabled(create) && disabled(apply)); // nothing set yet
  assert.equal(viewCode.textContent, "model_view = nnx.view(model)");
  assert.equal(viewCode.getAttribute("data-idle"), "true");
  create.dispatch("click");
  assert.equal(model.sent.length, 0);

  group("Dropout").querySelector("div.nnx-views-class-head").dispatch("click");
  control("deterministic").querySelector("button[data-value=true]").dispatch("click");
  assert.equal(control("deterministic").querySelector("button[data-value=true]").getAttribute("aria-pressed"), "true");
  assert.equal(
    control("deterministic").querySelector("button[data-value=unset]").getAttribute("aria-pressed"),
    "false",
  );
  assert.ok(!disabled(create) && !disabled(apply));
  assert.equal(viewCode.textContent, "model_view = nnx.view(model, only=nnx.Dropout, deterministic=True)");
  assert.equal(
    one(".nnx-views-code[data-action=apply]").textContent,
    "model.set_attributes(nnx.Dropout, deterministic=True)",
  );
  const name = one("input.nnx-views-name");
  assert.equal(name.value, "model_view");
  name.value = "ev";
  name.dispatch("input");
  assert.equal(viewCode.textContent, "ev = nnx.view(model, only=nnx.Dropout, deterministic=True)");

  create.dispatch("click");
  assert.equal(model.sent.length, 1);
  const msg = model.sent[0];
  assert.ok(Number.isInteger(msg.id));
  assert.deepEqual(msg, {
    type: "view",
    only: { class: "Dropout" },
    values: { deterministic: true },
    name: "ev",
    id: msg.id,
  });
  assert.equal(create.querySelector(".nnx-views-pending").textContent, "pending\u2026");
  assert.equal(create.getAttribute("data-state"), "pending");
  const status = one(".nnx-views-status");
  assert.equal(status.getAttribute("data-state"), "pending");
  assert.ok(status.textContent.startsWith("create view ev: pending\u2026"), status.textContent);

  ack(msg.id + 12345, "done", "someone else's"); // not ours: ignored
  assert.equal(status.getAttribute("data-state"), "pending");
  ack(msg.id, "queued", "the kernel is busy");
  assert.equal(status.getAttribute("data-state"), "queued");
  assert.ok(status.textContent.includes("pending \u2014 applies at the next step"), status.textContent);
  assert.equal(create.querySelector(".nnx-views-pending").textContent, "pending\u2026");
  assert.equal(create.getAttribute("data-state"), "queued");
  ack(
    msg.id,
    "done",
    "bound ev: a view of model (1 module changed)",
    "ev = nnx.view(model, only=nnx.Dropout, deterministic=True)  # ran",
  );
  assert.equal(create.querySelector(".nnx-views-pending").textContent, "");
  assert.equal(create.getAttribute("data-state"), null);
  assert.equal(create.textContent, "create view");
  assert.equal(status.getAttribute("data-state"), "done");
  assert.equal(status.textContent, "bound ev: a view of model (1 module changed)");
  assert.equal(viewCode.textContent, "ev = nnx.view(model, only=nnx.Dropout, deterministic=True)  # ran");
  assert.equal(viewCode.getAttribute("data-ran"), "true");
  // the next edit brings the live preview back
  control("deterministic").querySelector("button[data-value=false]").dispatch("click");
  assert.equal(viewCode.textContent, "ev = nnx.view(model, only=nnx.Dropout, deterministic=False)");
  assert.equal(viewCode.getAttribute("data-ran"), null);
  cleanup();
});

test("apply: int and literal inputs, bad input disables the buttons with a message", () => {
  const { model, one, q, control, row, ack, disabled, cleanup } = mount(mixed());
  row("attn").dispatch("click");
  const apply = one("button.nnx-views-apply");
  const ml = control("max_length");
  ml.value = "12.5";
  ml.dispatch("input");
  const err = q(".nnx-views-arg")
    .find((d) => d.getAttribute("data-name") === "max_length")
    .querySelector(".nnx-views-err");
  assert.equal(err.textContent, "not an integer or None");
  assert.equal(ml.getAttribute("aria-invalid"), "true");
  assert.ok(disabled(apply) && disabled(one("button.nnx-views-create")));
  ml.value = "None"; // int | None: None is a value, sent as null
  ml.dispatch("input");
  assert.equal(err.textContent, "");
  assert.equal(
    one(".nnx-views-code[data-action=apply]").textContent,
    "model.set_attributes(lambda path, node: path == ('attn',), max_length=None)",
  );
  ml.value = "64";
  ml.dispatch("input");
  assert.equal(err.textContent, "");
  assert.equal(ml.getAttribute("aria-invalid"), null);
  const bs = control("batch_size");
  bs.value = " (2, 3) ";
  bs.dispatch("input");
  assert.ok(!disabled(apply));
  assert.equal(
    one(".nnx-views-code[data-action=apply]").textContent,
    "model.set_attributes(lambda path, node: path == ('attn',), batch_size=(2, 3), max_length=64)",
  );
  apply.dispatch("click");
  const msg = model.sent.at(-1);
  assert.deepEqual(msg, {
    type: "apply",
    only: { path: ["attn"] },
    values: { batch_size: "(2, 3)", max_length: 64 },
    id: msg.id,
  });
  ack(msg.id, "error", "MultiHeadAttention.set_view: batch_size must be an int");
  const status = one(".nnx-views-status");
  assert.equal(status.getAttribute("data-state"), "error");
  assert.equal(status.textContent, "MultiHeadAttention.set_view: batch_size must be an int");
  assert.equal(apply.querySelector(".nnx-views-pending").textContent, "");
  assert.equal(ml.value, "64"); // the typed values stay, to be fixed
  // a bad view name
  const name = one("input.nnx-views-name");
  name.value = "class";
  name.dispatch("input");
  assert.equal(one(".nnx-views-form").querySelectorAll(".nnx-views-err").at(-1).textContent, "not a Python name");
  assert.ok(disabled(one("button.nnx-views-create")) && !disabled(apply));
  cleanup();
});

test("train/eval: pending until the ack; an error puts the switch back", () => {
  const { model, one, ack, cleanup } = mount(mixed());
  const ev = one("button[data-mode=eval]");
  const tr = one("button[data-mode=train]");
  ev.dispatch("click");
  const m1 = model.sent.at(-1);
  assert.deepEqual(m1, { type: "mode", mode: "eval", id: m1.id });
  assert.equal(ev.getAttribute("aria-pressed"), "true"); // shows the choice while it waits
  assert.equal(ev.textContent, "evalpending\u2026");
  assert.equal(ev.getAttribute("aria-busy"), "true");
  tr.dispatch("click");
  const m2 = model.sent.at(-1);
  assert.ok(m2.id > m1.id);
  assert.equal(tr.getAttribute("aria-pressed"), "true");
  assert.equal(ev.getAttribute("aria-pressed"), "false");
  ack(m2.id, "error", "Net.train() raised ValueError: boom");
  assert.equal(tr.getAttribute("aria-pressed"), "false");
  assert.equal(tr.textContent, "train");
  assert.equal(ev.getAttribute("aria-pressed"), "true"); // the eval click still waits
  assert.equal(one(".nnx-views-status").textContent, "Net.train() raised ValueError: boom \u00B7 1 more pending");
  // the kernel acks first, then re-sends the payload: the switch stays on eval in between
  ack(m1.id, "done", "model is now eval", "model.eval()");
  assert.equal(ev.textContent, "eval");
  assert.equal(ev.getAttribute("aria-pressed"), "true");
  assert.equal(one(".nnx-views-status").getAttribute("data-state"), "done");
  assert.equal(one(".nnx-views-status").textContent, "model is now eval");
  model.set("payload", evalMode());
  assert.equal(ev.getAttribute("aria-pressed"), "true");
  assert.equal(one(".nnx-views-mode").textContent, "eval");
  assert.equal(one(".nnx-views-mixed").hidden, true);
  const ran = one(".nnx-views-code[data-action=mode]");
  assert.equal(ran.textContent, "model.eval()");
  assert.equal(ran.parentNode.parentNode.hidden, false);
  cleanup();
});

test("a new payload keeps the scope, the typed values and the name; the default name follows until edited", () => {
  const { model, one, control, row, cleanup } = mount(mixed());
  row("attn").dispatch("click");
  const ml = control("max_length");
  ml.value = "32";
  ml.dispatch("input");
  const p = evalMode();
  p.default_name = "model_view2";
  model.set("payload", p);
  assert.equal(one("select.nnx-views-scope").value, "i:0:0");
  assert.equal(control("max_length"), ml); // same element: focus and caret survive a refresh
  assert.equal(one("input.nnx-views-name").value, "model_view2");
  assert.equal(row("attn").getAttribute("aria-selected"), "true");
  assert.equal(
    one(".nnx-views-code[data-action=apply]").textContent,
    "model.set_attributes(lambda path, node: path == ('attn',), max_length=32)",
  );
  const name = one("input.nnx-views-name");
  name.value = "mine";
  name.dispatch("input");
  model.set("payload", mixed());
  assert.equal(name.value, "mine");
  cleanup();
});

test("modes variant: header, warning, switch and listing; no controls; rows not clickable", () => {
  const p = mixed();
  p.variant = "modes";
  const { el, one, q, row, model, cleanup } = mount(p);
  assert.equal(el.children[0].getAttribute("data-variant"), "modes");
  assert.equal(one(".nnx-views-form").hidden, true);
  assert.equal(one(".nnx-views-mixed").hidden, false);
  assert.equal(q("tr.nnx-views-instance").length, 4);
  assert.equal(q("div.nnx-views-class-head")[0].getAttribute("role"), null);
  assert.equal(row("attn").getAttribute("tabindex"), null); // nothing to pick: not in the tab order
  row("attn").dispatch("click");
  assert.equal(row("attn").getAttribute("aria-selected"), null);
  one("button[data-mode=eval]").dispatch("click");
  assert.equal(model.sent.at(-1).type, "mode");
  cleanup();
});

test("a panel made with only=: 'all modules' means its filter; a deleted model: no form", () => {
  const p = mixed();
  p.base_only = "nnx.Dropout";
  const { model, one, control, cleanup } = mount(p);
  control("deterministic").querySelector("button[data-value=false]").dispatch("click");
  assert.equal(
    one(".nnx-views-code[data-action=view]").textContent,
    "model_view = nnx.view(model, only=nnx.Dropout, deterministic=False)",
  );
  assert.equal(
    one(".nnx-views-code[data-action=apply]").textContent,
    "model.set_attributes(nnx.Dropout, deterministic=False)",
  );
  one("button.nnx-views-apply").dispatch("click");
  assert.equal(model.sent.at(-1).only, null); // the kernel applies its own filter
  model.set("payload", { ...p, mode: "none", message: "the model is gone (deleted or garbage-collected)", gone: true });
  assert.equal(one(".nnx-views-form").hidden, true);
  assert.equal(one(".nnx-views-message").textContent, "the model is gone (deleted or garbage-collected)");
  assert.equal(one("button[data-mode=eval]").getAttribute("disabled"), "");
  cleanup();
});

test("a model without set_view: the message, no form, nothing to switch", () => {
  const { one, q, cleanup } = mount(empty());
  assert.equal(one(".nnx-views-message").textContent, empty().message);
  assert.ok(empty().message.startsWith("Linear: no submodule has set_view"));
  assert.equal(one(".nnx-views-message").hidden, false);
  assert.equal(one(".nnx-views-form").hidden, true);
  assert.equal(one(".nnx-views-list").hidden, true);
  assert.equal(one(".nnx-views-mode").textContent, "none");
  for (const b of one(".nnx-views-switch").querySelectorAll("button")) assert.equal(b.getAttribute("disabled"), "");
  cleanup();
});

test("the header's count is Python's: how many modules decide their mode at call time", () => {
  const text = "4 modules with set_view, 3 decided at call time";
  const { one, cleanup } = mount({ ...mixed(), count_text: text });
  assert.equal(one(".nnx-views-count").textContent, text);
  cleanup();
});
