// @ts-check
// Which items of a tree (tree.js) are listed: the filter mask and the depth-first flattening
// under expanded modules and opened stacked Variables. Pure, no DOM.

// --- filter -------------------------------------------------------------------------------

/**
 * Rows matching a case-insensitive substring of the path text and (when given) a Variable type.
 * Returns null when nothing filters.
 */
export function filterRows(tree, query, type = null) {
  const q = (query || "").trim().toLowerCase();
  if (!q && !type) return null;
  const m = new Uint8Array(tree.R);
  for (let r = 0; r < tree.R; r++) {
    if (type && tree.rowType[r] !== type) continue;
    if (q && !tree.rowPathLower[r].includes(q)) continue;
    m[r] = 1;
  }
  return m;
}

/** Modules that hold at least one matching row (at any depth). */
export function modulesWithMatches(tree, match) {
  const has = new Uint8Array(tree.N);
  for (let r = 0; r < tree.R; r++) {
    if (!match[r]) continue;
    for (let p = tree.rowParent[r]; p >= 0 && !has[p]; p = tree.nodeParent[p]) has[p] = 1;
  }
  return has;
}

// --- flatten ------------------------------------------------------------------------------

/**
 * The visible items, depth-first: modules in `expanded` show their children. With a `match`
 * mask (from filterRows), only matching Variables and the modules above them appear.
 */
export function flatten(tree, expanded, kids = tree.kids, match = null, openRows = null) {
  const N = tree.N;
  const has = match ? modulesWithMatches(tree, match) : null;
  const out = [];
  const stack = [[kids[0], 0]];
  while (stack.length) {
    const top = stack[stack.length - 1];
    const [list, pos] = top;
    if (pos >= list.length) {
      stack.pop();
      continue;
    }
    top[1] = pos + 1;
    const id = list[pos];
    if (id < N) {
      if (has && !has[id]) continue;
      out.push(id);
      if (expanded[id]) stack.push([kids[id + 1], 0]);
    } else {
      const layers = tree.layerKids && tree.layerKids.get(id - N);
      if (match && !match[id - N] && !(layers && layers.some((k) => match[k - N]))) continue;
      out.push(id);
      if (layers && openRows && openRows[id - N]) stack.push([layers, 0]);
    }
  }
  return out;
}
