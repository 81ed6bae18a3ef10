// Hand-made capture payloads for the tests: edge cases a small real model does not give (an XSS
// sow key and class name, NaN counts, gradients without a forward value). The real payloads of a
// real model are in test/generated (capture_real.test.js).

export const EVIL = "<img src=x onerror=alert(1)>";
export const EVIL_CLASS = "Evil<script>alert(2)</script>";

// --- payloads ---------------------------------------------------------------------------------

export function snap({ nodes, rows, stats, tables }) {
  const n = rows.parent.length;
  const fill = (v) => new Array(n).fill(v);
  return {
    version: 1,
    root_type: "State",
    nodes,
    rows: {
      shape: fill([2, 4]),
      dtype: fill(0),
      nbytes: fill(32),
      sharding: fill(-1),
      devices: fill(0),
      metadata: fill(-1),
      status: fill(0),
      ...rows,
    },
    stats: {
      mean: fill(0.5),
      std: fill(1),
      min: fill(-1),
      max: fill(2),
      norm: fill(3),
      abs_max: fill(2),
      nan_count: fill(0),
      inf_count: fill(0),
      zero_frac: fill(0),
      ...stats,
    },
    tables: {
      type: ["Intermediate", "Perturbation"],
      dtype: ["float32"],
      sharding: [],
      devices: ["cpu:0"],
      metadata: [],
      status: ["ok"],
      ...tables,
    },
    totals: {},
    devices: { platform: "cpu", count: 1, devices: [] },
  };
}

/** What a call of Net(b0: Block(linear), head) captured: b0.act, b0.pert, a root sow with an XSS key. */
export function forward() {
  return {
    snapshot: snap({
      nodes: { parent: [-1], key: ["b0"], type: [EVIL_CLASS] },
      rows: { parent: [-1, 0, 0], key: [EVIL, "act", "pert"], type: [0, 0, 1] },
      stats: { mean: [0.25, -0.5, 0] },
    }),
    hist: { bins: 4, rows: [[0, 1, 1, 0, 0, 5], [-2, 2, 2, 3, 2, 1], null] },
    grads: null,
    messages: [],
    types: ["Intermediate"],
    seen: ["Intermediate", "Perturbation"],
  };
}

export function withGrads() {
  return {
    ...forward(),
    grads: {
      snapshot: snap({
        nodes: { parent: [-1, -1], key: ["b0", "head"], type: ["Block", "Linear"] },
        rows: { parent: [0, 1], key: ["pert", "p2"], type: [1, 1] },
        stats: { mean: [0.125, 7], std: [0.5, 0], norm: [1.5, 2], nan_count: [0, 1] },
      }),
      hist: { bins: 4, rows: [[-1, 1, 0, 4, 4, 0], null] },
    },
  };
}

export function controls(extra = {}) {
  return {
    rev: 1,
    types: [
      { name: "Intermediate", on: true, title: "nnx.Intermediate" },
      { name: "Perturbation", on: false, title: "nnx.Perturbation" },
      { name: EVIL, on: false, title: EVIL },
    ],
    methods: false,
    modules: [
      { path: "", key: "", parent: -1, cls: "Net", on: true },
      { path: "b0", key: "b0", parent: 0, cls: EVIL_CLASS, on: true },
      { path: "b0.linear", key: "linear", parent: 1, cls: "Linear", on: true },
      { path: "head", key: "head", parent: 0, cls: "Linear", on: true },
    ],
    pending: false,
    ...extra,
  };
}
