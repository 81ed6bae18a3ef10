// @ts-check
// The snapshot payload as a tree of modules and Variables: its paths, depths, child order and
// the aggregates under each module, with expand/collapse state. Pure, no DOM. Filtering and
// flattening live in treeitems.js, sorting in treesort.js (re-exported here, as before).
//
// Items are numbered in one id space: module (container node) i is item i, Variable row r is
// item N + r, where N is the number of nodes.

import { keyText, shapeSize } from "./format.js";
import { layerLinks } from "./layers.js";
import { tableText } from "./tables.js";

export { filterRows, flatten, modulesWithMatches } from "./treeitems.js";
export { moduleSortValue, rowSortValue, sortKids } from "./treesort.js";

const EMPTY = { parent: [], key: [], type: [] };

function col(obj, name, n, fill = null) {
  const c = obj && obj[name];
  return Array.isArray(c) && c.length === n ? c : new Array(n).fill(fill);
}

/**
 * The parts of a tree that depend only on the snapshot's structure (paths, depths, child order).
 * `buildTree` reuses them when `structure` is unchanged.
 */
function buildShape(snap) {
  const nodes = snap.nodes || EMPTY;
  const rows = snap.rows || {};
  const N = (nodes.parent || []).length;
  const R = (rows.parent || []).length;
  const nodeParent = Int32Array.from(nodes.parent || []);
  const nodeKey = col(nodes, "key", N, "");
  const nodeType = col(nodes, "type", N, "");
  const rowParent = Int32Array.from(rows.parent || []);
  const rowKey = col(rows, "key", R, "");

  // Guard against malformed parents (out of range or cycles): treat them as the root.
  for (let i = 0; i < N; i++) {
    const p = nodeParent[i];
    if (p < -1 || p >= N || p === i) nodeParent[i] = -1;
  }
  for (let r = 0; r < R; r++) {
    const p = rowParent[r];
    if (p < -1 || p >= N) rowParent[r] = -1;
  }

  const nodePath = new Array(N);
  const nodeDepth = new Int32Array(N);
  const done = new Uint8Array(N);
  const chain = [];
  for (let i = 0; i < N; i++) {
    if (done[i]) continue;
    chain.length = 0;
    let j = i;
    while (j >= 0 && !done[j] && chain.length <= N) {
      chain.push(j);
      j = nodeParent[j];
    }
    if (chain.length > N) {
      // A cycle: cut it at i.
      nodeParent[i] = -1;
      chain.length = 0;
      chain.push(i);
      j = -1;
    }
    for (let k = chain.length - 1; k >= 0; k--) {
      const m = chain[k];
      const p = nodeParent[m];
      if (p < 0) {
        nodePath[m] = keyText(nodeKey[m], true);
        nodeDepth[m] = 0;
      } else {
        nodePath[m] = nodePath[p] + keyText(nodeKey[m], false);
        nodeDepth[m] = nodeDepth[p] + 1;
      }
      done[m] = 1;
    }
  }

  const rowPath = new Array(R);
  const rowPathLower = new Array(R);
  const rowDepth = new Int32Array(R);
  for (let r = 0; r < R; r++) {
    const p = rowParent[r];
    const k = rowKey[r];
    if (p < 0) {
      rowPath[r] = k === "" ? "" : keyText(k, true);
      rowDepth[r] = 0;
    } else {
      rowPath[r] = nodePath[p] + keyText(k, false);
      rowDepth[r] = nodeDepth[p] + 1;
    }
    rowPathLower[r] = rowPath[r].toLowerCase();
  }
  // A stacked Variable's layers: listed under its row, not its module (see layers.js).
  const { rowLayerOf, rowLayer, layerKids } = layerLinks(rows, R, N, rowPath, rowPathLower, rowDepth);

  // Children in order of first appearance among the rows (the rows come in path order);
  // modules holding no Variable at all go last under their parent.
  const kids = new Array(N + 1);
  for (let i = 0; i <= N; i++) kids[i] = [];
  const placed = new Uint8Array(N);
  const place = (i) => {
    if (i < 0 || placed[i]) return;
    chain.length = 0;
    let j = i;
    while (j >= 0 && !placed[j]) {
      chain.push(j);
      j = nodeParent[j];
    }
    for (let k = chain.length - 1; k >= 0; k--) {
      const m = chain[k];
      placed[m] = 1;
      kids[nodeParent[m] + 1].push(m);
    }
  };
  for (let r = 0; r < R; r++) {
    place(rowParent[r]);
    if (rowLayerOf[r] < 0) kids[rowParent[r] + 1].push(N + r);
  }
  for (let i = 0; i < N; i++) place(i);

  return {
    N,
    R,
    nodeParent,
    nodeKey,
    nodeType,
    nodePath,
    nodeDepth,
    rowParent,
    rowKey,
    rowPath,
    rowPathLower,
    rowDepth,
    kids,
    rowLayerOf,
    rowLayer,
    layerKids,
  };
}

/**
 * Tree of a snapshot payload. Pass the previous tree to reuse paths and child order when the
 * payload's `structure` is the same.
 */
export function buildTree(snap, prev = null) {
  snap = snap || {};
  let shape;
  const R = snap.rows && snap.rows.parent ? snap.rows.parent.length : 0;
  const N = snap.nodes && snap.nodes.parent ? snap.nodes.parent.length : 0;
  if (
    prev &&
    prev.structure !== undefined &&
    prev.structure !== null &&
    prev.structure === snap.structure &&
    prev.R === R &&
    prev.N === N
  ) {
    shape = prev.shape;
  } else {
    shape = buildShape(snap);
  }
  const rows = snap.rows || {};
  const stats = snap.stats || {};
  const tables = snap.tables || {};

  const typeIdx = col(rows, "type", R, -1);
  const rowType = new Array(R);
  for (let r = 0; r < R; r++) rowType[r] = tableText(tables, "type", typeIdx[r]);

  const nbytes = col(rows, "nbytes", R);
  const shapes = col(rows, "shape", R);
  const nan = col(stats, "nan_count", R);
  const inf = col(stats, "inf_count", R);

  // Aggregates of the Variables under each module.
  const nodeCount = new Float64Array(N);
  const nodeBytes = new Float64Array(N);
  const nodeSize = new Float64Array(N);
  const nodeNonfinite = new Float64Array(N);
  const { rowParent, nodeParent } = shape;
  for (let r = 0; r < R; r++) {
    if (shape.rowLayerOf[r] >= 0) continue; // a layer of a Variable counted already
    const b = nbytes[r] || 0;
    const z = shapeSize(shapes[r]) || 0;
    const nf = (nan[r] || 0) + (inf[r] || 0);
    for (let p = rowParent[r]; p >= 0; p = nodeParent[p]) {
      nodeCount[p] += 1;
      nodeBytes[p] += b;
      nodeSize[p] += z;
      nodeNonfinite[p] += nf;
    }
  }

  return {
    ...shape,
    shape,
    structure: snap.structure,
    snap,
    rowType,
    nodeCount,
    nodeBytes,
    nodeSize,
    nodeNonfinite,
  };
}

export function isModule(tree, id) {
  return id < tree.N;
}

/** Item path text. */
export function itemPath(tree, id) {
  return id < tree.N ? tree.nodePath[id] : tree.rowPath[id - tree.N];
}

/** Item depth (0 = directly under the root). */
export function itemDepth(tree, id) {
  return id < tree.N ? tree.nodeDepth[id] : tree.rowDepth[id - tree.N];
}

/** Ancestors of an item, nearest first (module indices). */
export function ancestors(tree, id) {
  const out = [];
  let p = id < tree.N ? tree.nodeParent[id] : tree.rowParent[id - tree.N];
  while (p >= 0) {
    out.push(p);
    p = tree.nodeParent[p];
  }
  return out;
}

/**
 * Initial expansion: top-level modules open; deeper ones open too when there are at most
 * `smallRows` Variables.
 */
export function defaultExpanded(tree, smallRows = 200) {
  const e = new Uint8Array(tree.N);
  const all = tree.R <= smallRows;
  for (let i = 0; i < tree.N; i++) e[i] = all || tree.nodeDepth[i] === 0 ? 1 : 0;
  return e;
}

/** Carry expansion over to a new tree by module path; new modules get the default. */
export function remapExpanded(oldTree, oldExpanded, newTree, smallRows = 200) {
  const e = defaultExpanded(newTree, smallRows);
  if (!oldTree || !oldExpanded) return e;
  const byPath = new Map();
  for (let i = 0; i < oldTree.N; i++) byPath.set(oldTree.nodePath[i], oldExpanded[i]);
  for (let i = 0; i < newTree.N; i++) {
    const v = byPath.get(newTree.nodePath[i]);
    if (v !== undefined) e[i] = v;
  }
  return e;
}
