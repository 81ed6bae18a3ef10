// @ts-check
// Stacked layers: a Variable with a layer axis (nnx.vmap / nnx.scan over blocks) is a row whose
// layers are rows too (the payload's `layer_of` and `layer` columns), listed under it when it is
// open. Pure, no DOM.

/**
 * Links of the layer rows: per row its stacked Variable's row (-1: none) and layer index, and per
 * stacked Variable its layers' item ids (N + row) in order. A layer's path is its Variable's path
 * + `[layer i]` (as Python's path_text writes it), its depth one more. Malformed links are ignored.
 */
export function layerLinks(rows, R, N, rowPath, rowPathLower, rowDepth) {
  const of = Array.isArray(rows.layer_of) && rows.layer_of.length === R ? rows.layer_of : null;
  const idx = Array.isArray(rows.layer) && rows.layer.length === R ? rows.layer : null;
  const rowLayerOf = new Int32Array(R).fill(-1);
  const rowLayer = new Int32Array(R).fill(-1);
  const layerKids = new Map();
  if (!of) return { rowLayerOf, rowLayer, layerKids };
  const valid = (p) => Number.isInteger(p) && p >= 0 && p < R;
  for (let r = 0; r < R; r++) {
    const p = of[r];
    if (!valid(p) || p === r || valid(of[p])) continue; // a layer's parent is a Variable, not a layer
    const layer = idx && Number.isInteger(idx[r]) ? idx[r] : (layerKids.get(p) || []).length;
    rowLayerOf[r] = p;
    rowLayer[r] = layer;
    if (!layerKids.has(p)) layerKids.set(p, []);
    layerKids.get(p).push(N + r);
    rowPath[r] = `${rowPath[p]}[layer ${layer}]`;
    rowPathLower[r] = rowPath[r].toLowerCase();
    rowDepth[r] = rowDepth[p] + 1;
  }
  return { rowLayerOf, rowLayer, layerKids };
}

/** Whether row r is a stacked Variable with layer rows. */
export function isStacked(tree, r) {
  return !!(tree && tree.layerKids && tree.layerKids.has(r));
}

/** Open stacked Variables carried over to a new tree by path (all closed at first). */
export function remapOpenRows(oldTree, oldOpen, newTree) {
  const open = new Uint8Array(newTree ? newTree.R : 0);
  if (!oldTree || !oldOpen || !newTree) return open;
  const byPath = new Map();
  for (const r of oldTree.layerKids.keys()) if (oldOpen[r]) byPath.set(oldTree.rowPath[r], 1);
  for (const r of newTree.layerKids.keys()) if (byPath.has(newTree.rowPath[r])) open[r] = 1;
  return open;
}
