// The view panel's pure logic: scopes, the arguments a scope takes, parsing inputs, code lines,
// and the bookkeeping of requests waiting for the kernel.
import nodeTest from "node:test";
import assert from "node:assert/strict";
import {
  ALL,
  applyCode,
  collectValues,
  helpText,
  keepScope,
  nameError,
  onlyJson,
  onlyText,
  parseInput,
  prepare,
  pyValue,
  scopeArgs,
  scopeFromValue,
  scopeOptions,
  scopeValue,
  viewCode,
} from "../src/views/data.js";
import { Requests } from "../src/shared/requests.js";
import { many, mixed as realMixed } from "./viewsfixtures.js";
import { testWith } from "./generated.js";

const test = testWith(nodeTest, "views_mixed");

/** The real payload (tools/js_fixtures.py), its classes in the order these tests number them. */
function mixed() {
  const p = realMixed();
  const order = ["Dropout", "BatchNorm", "MultiHeadAttention"];
  p.classes.sort((a, b) => order.indexOf(a.class) - order.indexOf(b.class));
  return p;
}

const dropout = { type: "class", name: "Dropout" };

test("prepare defaults every field and numbers classes and instances", () => {
  const p = prepare(mixed());
  assert.equal(p.variant, "views");
  assert.equal(p.count, 4);
  assert.deepEqual(
    p.classes.map((c) => c.name),
    ["Dropout", "BatchNorm", "MultiHeadAttention"],
  );
  assert.equal(p.classes[2].instances[0].keyId, '["attn"]');
  assert.equal(p.classes[0].instances[1].ii, 1);
  const e = prepare(undefined);
  assert.deepEqual(
    [e.variant, e.mode, e.target, e.defaultName, e.count, e.classes.length],
    ["views", "none", "model", "model_view", 0, 0],
  );
  const odd = prepare({
    variant: "modes",
    mode: "sideways",
    classes: [{ class: "X", args: [{ name: "a", kind: "weird" }], instances: [{ mode: "bogus" }] }],
  });
  assert.equal(odd.variant, "modes");
  assert.equal(odd.mode, "none");
  assert.equal(odd.classes[0].args[0].kind, "literal");
  assert.equal(odd.classes[0].instances[0].mode, null);
  assert.equal(odd.classes[0].instances[0].path, "(root)");
});

test("scope: union of arguments, each once, naming the classes that take it", () => {
  const p = prepare(mixed());
  const all = scopeArgs(p, ALL);
  assert.deepEqual(
    all.map((a) => a.name),
    ["deterministic", "use_running_average", "decode", "batch_size", "max_length"],
  );
  assert.deepEqual(all[0].classes, ["Dropout", "MultiHeadAttention"]);
  assert.equal(all[0].doc, mixed().classes[0].args[0].doc); // the first class's text
  assert.deepEqual(
    scopeArgs(p, dropout).map((a) => a.name),
    ["deterministic"],
  );
  const attn = scopeFromValue(p, "i:2:0");
  assert.deepEqual(attn, { type: "path", key: ["attn"], keyId: '["attn"]' });
  assert.deepEqual(
    scopeArgs(p, attn).map((a) => [a.name, a.kind]),
    [
      ["deterministic", "tri_bool"],
      ["decode", "tri_bool"],
      ["batch_size", "literal"],
      ["max_length", "int"],
    ],
  );
  assert.deepEqual(scopeArgs(p, { type: "class", name: "Gone" }), []);
});

test("scope: kinds several classes disagree on become the general one", () => {
  const p = prepare({
    classes: [
      {
        class: "A",
        args: [
          { name: "x", kind: "bool" },
          { name: "n", kind: "int" },
        ],
        instances: [],
      },
      {
        class: "B",
        args: [
          { name: "x", kind: "tri_bool", doc: "from B" },
          { name: "n", kind: "literal" },
        ],
        instances: [],
      },
    ],
  });
  const args = scopeArgs(p, ALL);
  assert.deepEqual(
    args.map((a) => [a.name, a.kind]),
    [
      ["x", "tri_bool"],
      ["n", "literal"],
    ],
  );
  assert.equal(args[0].doc, "from B"); // A had none
});

test("scope values round-trip, survive a new payload, and fall back to all modules", () => {
  const p = prepare(mixed());
  for (const v of ["all", "c:0", "c:2", "i:0:1", "i:2:0"]) assert.equal(scopeValue(p, scopeFromValue(p, v)), v);
  assert.deepEqual(scopeFromValue(p, "c:9"), ALL);
  assert.deepEqual(scopeFromValue(p, "i:0:7"), ALL);
  assert.deepEqual(scopeFromValue(p, "<img>"), ALL);
  const one = scopeFromValue(p, "i:0:1");
  const smaller = mixed();
  smaller.classes[0].instances.shift(); // layers[1] gone: layers[4] is now i:0:0
  const q = prepare(smaller);
  assert.equal(scopeValue(q, keepScope(q, one)), "i:0:0");
  smaller.classes.shift();
  const r = prepare(smaller);
  assert.deepEqual(keepScope(r, one), ALL);
  assert.deepEqual(keepScope(r, dropout), ALL);
  assert.deepEqual(keepScope(r, { type: "class", name: "BatchNorm" }), { type: "class", name: "BatchNorm" });
});

test("scope options: all, classes, instances capped (the selected one always listed)", () => {
  const p = prepare(mixed());
  const opts = scopeOptions(p);
  assert.deepEqual(
    opts.map((o) => o.label),
    [
      "all modules (4 instances)",
      "Dropout (2)",
      "BatchNorm (1)",
      "MultiHeadAttention (1)",
      "layers[1] (Dropout)",
      "layers[4] (Dropout)",
      "layers[3] (BatchNorm)",
      "attn (MultiHeadAttention)",
    ],
  );
  assert.deepEqual(
    opts.map((o) => o.group),
    ["", "classes", "classes", "classes", "instances", "instances", "instances", "instances"],
  );
  const big = prepare(many(5000));
  assert.equal(scopeOptions(big).length, 1 + 1 + 300);
  const far = scopeFromValue(big, "i:0:4321");
  const withFar = scopeOptions(big, far);
  assert.equal(withFar.length, 303);
  assert.deepEqual(withFar.at(-1), { value: "i:0:4321", label: "layers[4321] (Dropout)", group: "instances" });
});

test("only: the JSON sent and the Python text shown", () => {
  const p = prepare(mixed());
  assert.equal(onlyJson(ALL), null);
  assert.deepEqual(onlyJson(dropout), { class: "Dropout" });
  const one = scopeFromValue(p, "i:0:1");
  assert.deepEqual(onlyJson(one), { path: ["layers", 4] });
  assert.equal(JSON.stringify(onlyJson(one)), '{"path":["layers",4]}');
  assert.equal(onlyText(p, ALL), null);
  assert.equal(onlyText(p, dropout), "nnx.Dropout");
  assert.equal(onlyText(p, one), "lambda path, node: path == ('layers', 4)");
});

test("parseInput: tri-state, integers, literals", () => {
  assert.deepEqual(parseInput("tri_bool", "unset"), { set: false });
  assert.deepEqual(parseInput("tri_bool", undefined), { set: false });
  assert.deepEqual(parseInput("tri_bool", "true"), { set: true, value: true });
  assert.deepEqual(parseInput("bool", "false"), { set: true, value: false });
  assert.deepEqual(parseInput("int", ""), { set: false });
  assert.deepEqual(parseInput("int", "  "), { set: false });
  assert.deepEqual(parseInput("int", " 12 "), { set: true, value: 12 });
  assert.deepEqual(parseInput("int", "-3"), { set: true, value: -3 });
  assert.deepEqual(parseInput("int", "+7"), { set: true, value: 7 });
  assert.equal(parseInput("int", "1.5").error, "not an integer");
  assert.equal(parseInput("int", "1e3").error, "not an integer");
  assert.equal(parseInput("int", "abc").error, "not an integer");
  assert.equal(parseInput("int", "99999999999999999999").error, "too large");
  assert.deepEqual(parseInput("int", " None ", true), { set: true, value: null }); // int | None
  assert.equal(parseInput("int", "None").error, "not an integer"); // a plain int
  assert.equal(parseInput("int", "x", true).error, "not an integer or None");
  assert.deepEqual(parseInput("literal", ""), { set: false });
  assert.deepEqual(parseInput("literal", " (2, 3) "), { set: true, value: "(2, 3)" });
  assert.deepEqual(parseInput("literal", "__import__('os')"), { set: true, value: "__import__('os')" }); // Python refuses it
});

test("collectValues: only the arguments in scope, unset ones absent, errors by name", () => {
  const p = prepare(mixed());
  const args = scopeArgs(p, ALL);
  const raw = {
    deterministic: "true",
    use_running_average: "unset",
    decode: "false",
    batch_size: "",
    max_length: "x",
    gone: "true",
  };
  const r = collectValues(args, raw);
  assert.deepEqual(r.values, { deterministic: true, decode: false });
  assert.deepEqual(r.errors, { max_length: "not an integer or None" });
  assert.deepEqual(collectValues(args, { max_length: "None" }).values, { max_length: null }); // int | None
  assert.equal(r.count, 2);
  const d = collectValues(scopeArgs(p, dropout), raw);
  assert.deepEqual(d.values, { deterministic: true });
  assert.equal(collectValues(args, {}).count, 0);
});

test("code lines: nnx.view and set_attributes, only= omitted for all modules", () => {
  const p = prepare(mixed());
  const args = scopeArgs(p, ALL);
  assert.equal(
    viewCode(p, dropout, args, { deterministic: true }, "model_view"),
    "model_view = nnx.view(model, only=nnx.Dropout, deterministic=True)",
  );
  assert.equal(
    applyCode(p, dropout, args, { deterministic: true }),
    "model.set_attributes(nnx.Dropout, deterministic=True)",
  );
  assert.equal(
    viewCode(p, ALL, args, { use_running_average: false, deterministic: true }, "ev"),
    "ev = nnx.view(model, deterministic=True, use_running_average=False)",
  ); // argument order, not click order
  assert.equal(applyCode(p, ALL, args, {}), "model.set_attributes()");
  const attn = scopeFromValue(p, "i:2:0");
  assert.equal(
    viewCode(p, attn, scopeArgs(p, attn), { decode: true, batch_size: "(2, 3)", max_length: 64 }, ""),
    "model_view = nnx.view(model, only=lambda path, node: path == ('attn',), decode=True, batch_size=(2, 3), max_length=64)",
  );
  assert.equal(
    applyCode(p, attn, scopeArgs(p, attn), { max_length: 64 }),
    "model.set_attributes(lambda path, node: path == ('attn',), max_length=64)",
  );
  assert.deepEqual(
    [pyValue(true), pyValue(false), pyValue(3), pyValue("'a'"), pyValue(null)],
    ["True", "False", "3", "'a'", "None"],
  );
});

test("help text: the doc, else annotation = default", () => {
  assert.equal(helpText({ doc: "if True, ...", annotation: "bool", default: "None" }), "if True, ...");
  assert.equal(helpText({ doc: "", annotation: "int | None", default: "None" }), "int | None = None");
  assert.equal(helpText({ doc: "", annotation: "", default: "3" }), "default 3");
});

test("names: a Python identifier, not a keyword", () => {
  assert.equal(nameError("model_view"), "");
  assert.equal(nameError(" v2 "), "");
  assert.equal(nameError(""), "give the view a name");
  assert.equal(nameError("2v"), "not a Python name");
  assert.equal(nameError("class"), "not a Python name");
  assert.equal(nameError("a.b"), "not a Python name");
});

test("requests: increasing ids, pending until done/error, queued stays open, unknown ids ignored", () => {
  const reqs = new Requests();
  const a = reqs.start({ type: "mode", mode: "eval" }, "mode:eval");
  const b = reqs.start({ type: "view", only: null, values: { deterministic: true }, name: "v" }, "view");
  assert.ok(Number.isInteger(a.id) && b.id > a.id);
  assert.deepEqual(b, { type: "view", only: null, values: { deterministic: true }, name: "v", id: b.id });
  assert.equal(reqs.size, 2);
  assert.equal(reqs.of("mode:eval").length, 1);
  assert.equal(reqs.ack({ type: "ack", id: a.id + 1000, state: "done" }), null);
  const q = reqs.ack({ type: "ack", id: a.id, state: "queued", text: "applies at the next step" });
  assert.equal(q.state, "queued");
  assert.equal(reqs.of("mode:eval")[0].state, "queued");
  const d = reqs.ack({ type: "ack", id: a.id, state: "done", text: "Net: eval", code: "model.eval()" });
  assert.deepEqual([d.state, d.text, d.code], ["done", "Net: eval", "model.eval()"]);
  assert.equal(reqs.of("mode:eval").length, 0);
  assert.equal(reqs.ack({ type: "ack", id: a.id, state: "done" }), null); // a repeat
  const e = reqs.ack({ type: "ack", id: b.id, state: "error", text: "Unused keys found in nnx.view" });
  assert.equal(e.state, "error");
  assert.equal(reqs.size, 0);
  const c = reqs.start({ type: "apply" }, "apply");
  assert.equal(reqs.ack({ id: c.id, state: "weird" }).state, "error"); // an unknown state closes it as an error
  const other = new Requests(); // another panel on the page: ids never repeat
  assert.ok(other.start({ type: "mode", mode: "train" }, "mode:train").id > c.id);
});
