// @ts-check
// A snapshot payload's string tables: columns such as dtype, sharding or status hold indices into
// `snap.tables[name]`, so that each text is sent once; tree.js, treesort.js and treerows.js read them here.

/** The text at `idx` of the payload table `name`; "" when the index, or the table, is missing. */
export function tableText(tables, name, idx) {
  const t = tables && tables[name];
  return idx !== null && idx !== undefined && idx >= 0 && t && idx < t.length ? String(t[idx]) : "";
}
