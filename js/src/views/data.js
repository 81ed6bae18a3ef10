// @ts-check
// The view panel's pure parts (no DOM): the payload with every field defaulted, scopes (the
// `only=` of nnx.view / set_attributes), the arguments a scope takes, parsing what the user typed,
// the Python line a click runs, and the bookkeeping of requests waiting for the kernel.
//
// Payload (ViewPanel.payload, re-sent whole after every change):
//   {variant, root, target, default_name, mode, summary, disagreeing, message, base_only, gone,
//    classes: [{class, only, args: [{name, annotation, default, doc, kind, nullable}],
//               instances: [{path, key, only, mode, values: {arg: repr}}]}]}

import { isIdentifier } from "../shared/format.js";

export const MODES = ["train", "eval", "unset", "mixed", "none"];
export const KINDS = ["tri_bool", "bool", "int", "literal"];
export const ALL = { type: "all" };

const list = (x) => (Array.isArray(x) ? x : []);
const str = (x, dflt = "") => (x === null || x === undefined ? dflt : String(x));
const obj = (x) => (x && typeof x === "object" && !Array.isArray(x) ? x : {});

/** A stable text id of a path key (a JSON list): equal keys, equal ids. */
export function keyId(key) {
  return JSON.stringify(list(key));
}

function prepArg(a) {
  const o = obj(a);
  return {
    name: str(o.name),
    annotation: str(o.annotation),
    default: str(o.default, "None"),
    doc: str(o.doc),
    kind: KINDS.includes(o.kind) ? o.kind : "literal",
    nullable: Boolean(o.nullable), // the annotation allows None (`int | None`): "None" is a value
  };
}

/**
 * prepare(payload) -> the payload with every field defaulted; classes keep their order, each
 * instance gets `keyId` and its class index `ci`. `count` is the number of instances.
 * @param {Partial<import("../shared/wire").ViewsPayload> | null | undefined} payload the synced trait (traits.py)
 */
export function prepare(payload) {
  /** @type {Partial<import("../shared/wire").ViewsPayload>} */
  const p = obj(payload);
  let count = 0;
  const classes = list(p.classes).map((c, ci) => {
    const o = obj(c);
    const name = str(o.class);
    const args = list(o.args)
      .map(prepArg)
      .filter((a) => a.name);
    const instances = list(o.instances).map((i, ii) => {
      const io = obj(i);
      const key = list(io.key);
      return {
        ci,
        ii,
        path: str(io.path, "(root)"),
        key,
        keyId: keyId(key),
        only: str(io.only),
        mode: MODES.includes(io.mode) ? io.mode : null,
        values: obj(io.values),
      };
    });
    count += instances.length;
    return { ci, name, only: str(o.only, name), args, instances };
  });
  return {
    variant: p.variant === "modes" ? "modes" : "views",
    root: str(p.root),
    target: str(p.target, "model"),
    defaultName: str(p.default_name, "model_view"),
    mode: MODES.includes(p.mode) ? p.mode : "none",
    summary: str(p.summary),
    countText: str(p.count_text), // Python's "4 modules with set_view, 3 decided at call time"
    disagreeing: list(p.disagreeing).map((x) => str(x)),
    message: str(p.message),
    baseOnly: str(p.base_only), // the panel's own only= (view_panel(model, only=...)): what "all" means
    gone: Boolean(p.gone), // the model was deleted: nothing left to change
    classes,
    count,
  };
}

// --- scopes ------------------------------------------------------------------------------------
// A scope is {type: "all"} | {type: "class", name} | {type: "path", key, keyId}; the <select>
// names them "all", "c:<class index>" and "i:<class index>:<instance index>".

/** The scope a <select> value names, or ALL when it names nothing in this payload. */
export function scopeFromValue(prep, value) {
  const v = str(value);
  let m = /^c:(\d+)$/.exec(v);
  if (m && prep.classes[+m[1]]) return { type: "class", name: prep.classes[+m[1]].name };
  m = /^i:(\d+):(\d+)$/.exec(v);
  const inst = m && prep.classes[+m[1]] && prep.classes[+m[1]].instances[+m[2]];
  if (inst) return { type: "path", key: inst.key, keyId: inst.keyId };
  return ALL;
}

/** The class a class scope names (by name), or null. */
export function findClass(prep, name) {
  return prep.classes.find((c) => c.name === name) || null;
}

/** The instance a path scope names (by key), or null. */
export function findInstance(prep, id) {
  for (const c of prep.classes) for (const i of c.instances) if (i.keyId === id) return i;
  return null;
}

/** `scope` carried over to a new payload: the same class / path if it is still there, else ALL. */
export function keepScope(prep, scope) {
  if (scope && scope.type === "class" && findClass(prep, scope.name)) return scope;
  if (scope && scope.type === "path" && findInstance(prep, scope.keyId)) return scope;
  return ALL;
}

/** The <select> value of a scope. */
export function scopeValue(prep, scope) {
  if (scope.type === "class") {
    const c = findClass(prep, scope.name);
    return c ? `c:${c.ci}` : "all";
  }
  if (scope.type === "path") {
    const i = findInstance(prep, scope.keyId);
    return i ? `i:${i.ci}:${i.ii}` : "all";
  }
  return "all";
}

/**
 * The scope chooser's options: [{value, label, group}] with group "" (all modules), "classes"
 * or "instances". At most `cap` instance options (a big model lists thousands), plus the one
 * `scope` names when it is past the cap: an instance row's click selects it all the same.
 */
export function scopeOptions(prep, scope = ALL, cap = 300) {
  const n = prep.count;
  const out = [{ value: "all", label: `all modules (${n} instance${n === 1 ? "" : "s"})`, group: "" }];
  for (const c of prep.classes) {
    const k = c.instances.length;
    out.push({ value: `c:${c.ci}`, label: `${c.name} (${k})`, group: "classes" });
  }
  let shown = 0;
  let selectedShown = false;
  for (const c of prep.classes) {
    for (const i of c.instances) {
      if (shown >= cap) break;
      shown += 1;
      if (scope.type === "path" && i.keyId === scope.keyId) selectedShown = true;
      out.push({ value: `i:${i.ci}:${i.ii}`, label: `${i.path} (${c.name})`, group: "instances" });
    }
  }
  if (scope.type === "path" && !selectedShown) {
    const i = findInstance(prep, scope.keyId);
    if (i)
      out.push({ value: `i:${i.ci}:${i.ii}`, label: `${i.path} (${prep.classes[i.ci].name})`, group: "instances" });
  }
  return out;
}

/** The classes a scope covers. */
export function scopeClasses(prep, scope) {
  if (scope.type === "class") return prep.classes.filter((c) => c.name === scope.name);
  if (scope.type === "path") {
    const i = findInstance(prep, scope.keyId);
    return i ? [prep.classes[i.ci]] : [];
  }
  return prep.classes;
}

function mergeKind(a, b) {
  if (a === b) return a;
  const bools = ["tri_bool", "bool"];
  if (bools.includes(a) && bools.includes(b)) return "tri_bool";
  return "literal"; // an int for one class and anything else for another: typed as a literal
}

/**
 * The arguments the modules in `scope` take, each once, in first-seen order: {name, annotation,
 * default, doc, kind, classes: [class names that take it]}. An argument several classes share
 * keeps the first class's text (doc, annotation, default); a kind they disagree on becomes the
 * more general one (bool + tri_bool -> tri_bool, int + anything else -> literal).
 */
export function scopeArgs(prep, scope) {
  const byName = new Map();
  for (const c of scopeClasses(prep, scope)) {
    for (const a of c.args) {
      const seen = byName.get(a.name);
      if (!seen) byName.set(a.name, { ...a, classes: [c.name] });
      else {
        seen.kind = mergeKind(seen.kind, a.kind);
        seen.nullable = seen.nullable || a.nullable;
        if (!seen.doc && a.doc) seen.doc = a.doc;
        if (!seen.classes.includes(c.name)) seen.classes.push(c.name);
      }
    }
  }
  return [...byName.values()];
}

/** The help text of an argument: its doc, else "annotation = default". */
export function helpText(arg) {
  if (arg.doc) return arg.doc;
  return arg.annotation ? `${arg.annotation} = ${arg.default}` : `default ${arg.default}`;
}

/** What JS sends as `only`: null (all modules), {class: name} or {path: key}. */
export function onlyJson(scope) {
  if (scope.type === "class") return { class: scope.name };
  if (scope.type === "path") return { path: scope.key };
  return null;
}

/** The Python text of `only=` for a scope, or null for all modules (of a panel made without only=). */
export function onlyText(prep, scope) {
  if (scope.type === "class") {
    const c = findClass(prep, scope.name);
    return c ? c.only : null;
  }
  if (scope.type === "path") {
    const i = findInstance(prep, scope.keyId);
    return i && i.only ? i.only : null;
  }
  return prep.baseOnly || null;
}

/** A short text naming the scope: "all modules", "Dropout (3)", "layers[1]". */
export function scopeLabel(prep, scope) {
  if (scope.type === "class") {
    const c = findClass(prep, scope.name);
    return c ? `every ${c.name}` : "all modules";
  }
  if (scope.type === "path") {
    const i = findInstance(prep, scope.keyId);
    return i ? i.path : "all modules";
  }
  return "all modules";
}

// --- inputs -> values ----------------------------------------------------------------------------

const INT = /^[+-]?\d+$/;

/**
 * What one control holds, as sent: {set: false} (unset / empty), {set: true, value} or
 * {set: false, error}. Tri-state controls hold "unset" | "true" | "false"; int inputs a decimal
 * integer (a JS number, so within ±2^53), or None when `nullable` (sent as null); literal inputs
 * any text, sent as typed (trimmed) for Python's ast.literal_eval.
 */
export function parseInput(kind, raw, nullable = false) {
  if (kind === "tri_bool" || kind === "bool") {
    if (raw === true || raw === "true") return { set: true, value: true };
    if (raw === false || raw === "false") return { set: true, value: false };
    return { set: false };
  }
  const t = str(raw).trim();
  if (t === "") return { set: false };
  if (kind === "int") {
    if (nullable && t === "None") return { set: true, value: null };
    if (!INT.test(t)) return { set: false, error: nullable ? "not an integer or None" : "not an integer" };
    const n = Number(t);
    if (!Number.isSafeInteger(n)) return { set: false, error: "too large" };
    return { set: true, value: n };
  }
  return { set: true, value: t };
}

/**
 * collectValues(args, raw) -> {values, errors, count}: the values to send for the arguments in
 * scope (`raw` maps argument name -> what its control holds), errors by argument name.
 */
export function collectValues(args, raw) {
  const values = {};
  const errors = {};
  let count = 0;
  for (const a of args) {
    const r = parseInput(a.kind, raw[a.name], a.nullable);
    if (r.error) errors[a.name] = r.error;
    else if (r.set) {
      values[a.name] = r.value;
      count += 1;
    }
  }
  return { values, errors, count };
}

/** A value as Python source: True/False, an integer, or the literal text as typed. */
export function pyValue(value) {
  if (value === true) return "True";
  if (value === false) return "False";
  if (value === null || value === undefined) return "None";
  return String(value);
}

function kwargs(args, values) {
  return args
    .filter((a) => Object.prototype.hasOwnProperty.call(values, a.name))
    .map((a) => `${a.name}=${pyValue(values[a.name])}`);
}

/** `model_view = nnx.view(model, only=nnx.Dropout, deterministic=True)` */
export function viewCode(prep, scope, args, values, name) {
  const only = onlyText(prep, scope);
  const parts = [prep.target];
  if (only) parts.push(`only=${only}`);
  parts.push(...kwargs(args, values));
  return `${name || prep.defaultName} = nnx.view(${parts.join(", ")})`;
}

/** `model.set_attributes(nnx.Dropout, deterministic=True)` */
export function applyCode(prep, scope, args, values) {
  const only = onlyText(prep, scope);
  const parts = [];
  if (only) parts.push(only);
  parts.push(...kwargs(args, values));
  return `${prep.target}.set_attributes(${parts.join(", ")})`;
}

/** Why a view cannot be bound to `name`, or "" when it can. */
export function nameError(name) {
  const t = str(name).trim();
  if (!t) return "give the view a name";
  if (!isIdentifier(t)) return "not a Python name";
  return "";
}
