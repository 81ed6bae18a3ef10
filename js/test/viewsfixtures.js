// View panel payloads for the tests, in the shape ViewPanel.payload has (see src/views.js):
// a model with two Dropouts, a BatchNorm and a MultiHeadAttention, as flax 0.12 describes them.

const DROPOUT_ARGS = [
  { name: "deterministic", annotation: "bool | None", default: "None", kind: "tri_bool",
    doc: "if True, disables dropout and masking. If False, enables it." },
];
const BN_ARGS = [
  { name: "use_running_average", annotation: "bool | None", default: "None", kind: "tri_bool",
    doc: "if True, the stored batch statistics will be used instead of computing the batch statistics on the input." },
];
const MHA_ARGS = [
  { name: "deterministic", annotation: "bool | None", default: "None", kind: "tri_bool",
    doc: "if True, the module is set to deterministic mode." },
  { name: "decode", annotation: "bool | None", default: "None", kind: "tri_bool", doc: "if True, the module is set to decode mode." },
  { name: "batch_size", annotation: "int | Shape | None", default: "None", kind: "literal", doc: "the batch size to use for the cache." },
  { name: "max_length", annotation: "int | None", default: "None", kind: "int", nullable: true, doc: "" },
];

const inst = (path, key, mode, values) => ({
  path, key, mode, values,
  only: `lambda path, node: path == (${key.map((k) => (typeof k === "string" ? `'${k}'` : String(k))).join(", ")}${key.length === 1 ? "," : ""})`,
});

/** Everything in train mode except layers[3] (BatchNorm, eval): mixed. */
export function mixed() {
  return {
    variant: "views",
    root: "Net",
    target: "model",
    default_name: "model_view",
    mode: "mixed",
    summary: "Net: mixed (4 of 4 modules with set_view have a mode); not like the rest: layers[3]",
    disagreeing: ["layers[3]"],
    message: "",
    classes: [
      { class: "Dropout", only: "nnx.Dropout", args: structuredClone(DROPOUT_ARGS),
        instances: [
          inst("layers[1]", ["layers", 1], "train", { deterministic: "False" }),
          inst("layers[4]", ["layers", 4], "train", { deterministic: "False" }),
        ] },
      { class: "BatchNorm", only: "nnx.BatchNorm", args: structuredClone(BN_ARGS),
        instances: [inst("layers[3]", ["layers", 3], "eval", { use_running_average: "True" })] },
      { class: "MultiHeadAttention", only: "nnx.MultiHeadAttention", args: structuredClone(MHA_ARGS),
        instances: [inst("attn", ["attn"], "train", { deterministic: "False", decode: "False" })] },
    ],
  };
}

/** The same model after model.eval(). */
export function evalMode() {
  const p = mixed();
  p.mode = "eval";
  p.summary = "Net: eval (4 of 4 modules with set_view have a mode)";
  p.disagreeing = [];
  for (const c of p.classes) {
    for (const i of c.instances) {
      i.mode = "eval";
      for (const k of Object.keys(i.values)) if (k !== "decode") i.values[k] = "True";
    }
  }
  return p;
}

/** No submodule has set_view. */
export function empty() {
  return {
    variant: "views", root: "Linear", target: "lin", default_name: "lin_view", mode: "none",
    summary: "Linear: no submodule has set_view, so there is no mode to show", disagreeing: [],
    message: "Linear: no submodule has set_view, so there is nothing to switch", classes: [],
  };
}

/** `n` Dropouts in one list: a big model. */
export function many(n) {
  const instances = [];
  for (let k = 0; k < n; k++) instances.push(inst(`layers[${k}]`, ["layers", k], "train", { deterministic: "False" }));
  return {
    variant: "views", root: "Deep", target: "deep", default_name: "deep_view", mode: "train",
    summary: `Deep: train (${n} of ${n} modules with set_view have a mode)`, disagreeing: [], message: "",
    classes: [{ class: "Dropout", only: "nnx.Dropout", args: structuredClone(DROPOUT_ARGS), instances }],
  };
}
