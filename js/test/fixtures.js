// Payloads for the tests: the real one nnx_lab.snapshot() gives for
// nnx.Sequential(nnx.Linear(2, 3), nnx.BatchNorm(3)), plus a hand-made tricky one.

export function sequential(extra = {}) {
  return {
    version: 1, root_type: "Sequential", refresh: 1, structure: 1,
    nodes: { parent: [-1, 0, 0], key: ["layers", 0, 1], type: ["List", "Linear", "BatchNorm"] },
    rows: {
      parent: [1, 1, 2, 2, 2, 2], key: ["bias", "kernel", "bias", "mean", "scale", "var"],
      type: [0, 0, 0, 1, 0, 1], shape: [[3], [2, 3], [3], [3], [3], [3]], dtype: [0, 0, 0, 0, 0, 0],
      nbytes: [12, 24, 12, 12, 12, 12], sharding: [-1, -1, -1, -1, -1, -1], devices: [0, 0, 0, 0, 0, 0],
      metadata: [-1, -1, -1, -1, -1, -1], status: [0, 0, 0, 0, 0, 0],
    },
    stats: {
      mean: [0.0, -0.264, 0.0, 0.0, 1.0, 1.0], std: [0.0, 0.6262, 0.0, 0.0, 0.0, 0.0],
      min: [0.0, -0.8758, 0.0, 0.0, 1.0, 1.0], max: [0.0, 0.7567, 0.0, 0.0, 1.0, 1.0],
      norm: [0.0, 1.665, 0.0, 0.0, 1.732, 1.732], abs_max: [0.0, 0.8758, 0.0, 0.0, 1.0, 1.0],
      nan_count: [0, 0, 0, 0, 0, 0], inf_count: [0, 0, 0, 0, 0, 0], zero_frac: [1.0, 0.0, 1.0, 1.0, 0.0, 0.0],
    },
    tables: { type: ["Param", "BatchStat"], dtype: ["float32"], sharding: [], devices: ["cpu:0"], metadata: [], status: ["ok"] },
    totals: { Param: { count: 4, size: 15, bytes: 60 }, BatchStat: { count: 2, size: 6, bytes: 24 }, all: { count: 6, size: 21, bytes: 84 } },
    devices: { platform: "cpu", device_kind: "cpu", count: 1, devices: [{ id: 0, platform: "cpu", kind: "cpu", bytes_in_use: null, peak_bytes_in_use: null, bytes_limit: null }] },
    ...extra,
  };
}

/**
 * root: step (Variable), d (Dict) {'<script>': x, 'a b': y}, blocks (List) [Block{w, attn{q}}, Block{w, attn{q}}]
 * Rows come in this order: blocks[0].w, blocks[0].attn.q, blocks[1].w, blocks[1].attn.q,
 * d['<script>'], d['a b'], step. Node "empty" holds nothing.
 */
export function tricky() {
  const nodes = {
    parent: [-1, 0, 1, 0, 3, -1, -1],
    key: ["blocks", 0, "attn", 1, "attn", "d", "empty"],
    type: ["List", "Block", "Attention", "Block", "Attention", "Dict", "Dropout"],
  };
  const rows = {
    parent: [1, 2, 3, 4, 5, 5, -1],
    key: ["w", "q", "w", "q", "<script>", "a b", "step"],
    type: [0, 0, 0, 0, 1, 1, 2],
    shape: [[4, 4], [4], [8, 4], [2], [3], [], []],
    dtype: [0, 0, 0, 0, 0, 0, 1],
    nbytes: [64, 16, 128, 8, 12, 4, 4],
    sharding: [-1, -1, 0, -1, -1, -1, -1],
    devices: [0, 0, 0, 0, 0, 0, 0],
    metadata: [-1, -1, -1, -1, -1, -1, -1],
    status: [0, 0, 0, 0, 0, 1, 0],
    note: [null, null, null, null, null, "abstract: no data", null],
  };
  const stats = {
    mean: [0.5, -1, 2, null, 3, null, 7], std: [1, 1, 1, 1, 1, null, 0],
    min: [0, 0, 0, 0, 0, null, 7], max: [1, 1, 1, 1, 1, null, 7],
    norm: [4, 1, 9, 2, 3, null, 7], abs_max: [1, 1, 1, 1, 1, null, 7],
    nan_count: [0, 0, 2, 0, 0, null, 0], inf_count: [0, 0, 1, 5, 0, null, 0], zero_frac: [0, 0, 0, 0, 0, null, 0],
  };
  return {
    version: 1, root_type: "Net", refresh: 3, structure: 9, nodes, rows, stats,
    tables: { type: ["Param", "Custom", "Variable"], dtype: ["float32", "int32"], sharding: ["PartitionSpec('data',)"], devices: ["cpu:0"], metadata: [], status: ["ok", "abstract"] },
    totals: {},
    devices: {},
  };
}
