// Split reports for the tests: the real ones SplitReportView gives for
// nnx.Sequential(nnx.Linear(2, 3), nnx.BatchNorm(3), nnx.Dropout(0.1, rngs=...)), split by
// (nnx.Param, nnx.Variable, nnx.PathContains('nothing')) and by (nnx.Param, nnx.BatchStat).

const ROWS = {
  path: ["layers[0].bias", "layers[0].kernel", "layers[1].bias", "layers[1].mean", "layers[1].scale", "layers[1].var", "layers[2].rngs.count", "layers[2].rngs.key"],
  type: ["Param", "Param", "Param", "BatchStat", "Param", "BatchStat", "RngCount", "RngKey"],
  shape: [[3], [2, 3], [3], [3], [3], [3], [], []],
  dtype: ["float32", "float32", "float32", "float32", "float32", "float32", "uint32", "key<fry>"],
  nbytes: [12, 24, 12, 12, 12, 12, 4, 8],
  aliases: [[], [], [], [], [], [], [], []],
};

/** Param, Variable (shadowing every Param), PathContains('nothing') (takes nothing); exhaustive. */
export function shadowing() {
  return {
    root_type: "Sequential",
    filters: [
      { label: "nnx.Param", name: "param", count: 4, size: 15, bytes: 60, types: { Param: 4 }, shadowing: 4 },
      { label: "nnx.Variable", name: "variable", count: 4, size: 8, bytes: 36, types: { BatchStat: 2, RngCount: 1, RngKey: 1 }, shadowing: 0 },
      { label: "PathContains('nothing', exact=True)", name: "nothing", count: 0, size: 0, bytes: 0, types: {}, shadowing: 0 },
    ],
    rows: {
      ...structuredClone(ROWS),
      taken_by: [0, 0, 0, 1, 0, 1, 1, 1],
      matched_by: [[0, 1], [0, 1], [0, 1], [1], [0, 1], [1], [1], [1]],
    },
    problems: [
      "filter 3 (PathContains('nothing', exact=True)) took nothing",
      "layers[0].bias went to nnx.Param; also matched by nnx.Variable",
      "layers[0].kernel went to nnx.Param; also matched by nnx.Variable",
      "layers[1].bias went to nnx.Param; also matched by nnx.Variable",
      "layers[1].scale went to nnx.Param; also matched by nnx.Variable",
    ],
    code: "graphdef, param, variable, nothing = nnx.split(model, nnx.Param, nnx.Variable, PathContains('nothing', exact=True))",
    names: ["graphdef", "param", "variable", "nothing"],
  };
}

/** Param, BatchStat: the two RNG Variables are the remainder. */
export function partial() {
  return {
    root_type: "Sequential",
    filters: [
      { label: "nnx.Param", name: "param", count: 4, size: 15, bytes: 60, types: { Param: 4 }, shadowing: 0 },
      { label: "nnx.BatchStat", name: "batch_stat", count: 2, size: 6, bytes: 24, types: { BatchStat: 2 }, shadowing: 0 },
    ],
    rows: {
      ...structuredClone(ROWS),
      taken_by: [0, 0, 0, 1, 0, 1, null, null],
      matched_by: [[0], [0], [0], [1], [0], [1], [], []],
    },
    problems: [
      "not exhaustive: 2 Variables matched no filter (layers[2].rngs.count, layers[2].rngs.key); add `...` as the last filter to collect them",
    ],
    code: "graphdef, param, batch_stat = nnx.split(model, nnx.Param, nnx.BatchStat)",
    names: ["graphdef", "param", "batch_stat"],
  };
}

/** n Variables: even ones Params (taken by filter 0, shadowed by 1), odd ones BatchStats (taken by 1). */
export function big(n) {
  const idx = Array.from({ length: n }, (_, i) => i);
  return {
    root_type: "Big",
    filters: [
      { label: "nnx.Param", name: "param", count: Math.ceil(n / 2), size: 0, bytes: 0, types: {}, shadowing: Math.ceil(n / 2) },
      { label: "nnx.Variable", name: "variable", count: Math.floor(n / 2), size: 0, bytes: 0, types: {}, shadowing: 0 },
    ],
    rows: {
      path: idx.map((i) => `layers[${i}].w`),
      type: idx.map((i) => (i % 2 ? "BatchStat" : "Param")),
      shape: idx.map(() => [4]),
      dtype: idx.map(() => "float32"),
      nbytes: idx.map(() => 16),
      taken_by: idx.map((i) => (i % 2 ? 1 : 0)),
      matched_by: idx.map((i) => (i % 2 ? [1] : [0, 1])),
      aliases: idx.map(() => []),
    },
    problems: idx.filter((i) => i % 2 === 0).map((i) => `layers[${i}].w went to nnx.Param; also matched by nnx.Variable`),
    code: "graphdef, param, variable = nnx.split(model, nnx.Param, nnx.Variable)",
    names: ["graphdef", "param", "variable"],
  };
}
