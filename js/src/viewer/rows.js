// @ts-check
// Which rows the viewer lists: the snapshot's tree, the modules open (their own set while a filter
// is on: all open unless the user closes one), the filter (path text and Variable type) and the
// sort. Pure state over shared/tree.js; no DOM.

import { ancestors, buildTree, defaultExpanded, filterRows, flatten, remapExpanded, sortKids } from "../shared/tree.js";
import { nextSort } from "../shared/columns.js";
import { isStacked, remapOpenRows } from "../shared/layers.js";

export class RowState {
  constructor() {
    this.tree = null;
    this.expandedNormal = new Uint8Array(0);
    this.filterExpanded = null;
    this.query = "";
    this.typeFilter = null;
    this.sort = null;
    this.kids = null; // sorted children (cached per tree+sort)
    this.match = null;
    this.openRows = new Uint8Array(0); // stacked Variables showing their layers (all closed at first)
  }

  /** The open modules now (the filter's own set while filtering). */
  get expanded() {
    return this.match ? this.filterExpanded : this.expandedNormal;
  }

  /** A new snapshot: the tree is rebuilt, open modules kept where the structure allows. */
  setSnapshot(snap) {
    if (snap.version === undefined) {
      this.tree = null;
      return;
    }
    const old = this.tree;
    this.tree = buildTree(snap, old);
    if (!old || old.shape !== this.tree.shape) {
      this.expandedNormal = old ? remapExpanded(old, this.expandedNormal, this.tree) : defaultExpanded(this.tree);
      this.openRows = remapOpenRows(old, this.openRows, this.tree);
      this.filterExpanded = null;
      this.match = null;
    }
    this.kids = null;
    this.refilter();
  }

  refilter() {
    const had = !!this.match;
    const tree = this.tree;
    this.match = tree ? filterRows(tree, this.query, this.typeFilter) : null;
    if (this.match && (!had || !this.filterExpanded || this.filterExpanded.length !== tree.N)) {
      this.filterExpanded = new Uint8Array(tree.N).fill(1);
    }
    if (!this.match) this.filterExpanded = null;
  }

  setQuery(text) {
    if (text === this.query) return false;
    this.query = text;
    this.filterExpanded = null;
    this.refilter();
    return true;
  }

  /** Click on a type chip: filter by it, or stop filtering by it. */
  toggleType(name) {
    this.typeFilter = this.typeFilter === name ? null : name;
    this.filterExpanded = null;
    this.refilter();
  }

  sortBy(column) {
    this.sort = nextSort(this.sort, column);
    this.kids = null;
  }

  toggle(i) {
    if (this.tree && i >= this.tree.N) {
      const r = i - this.tree.N;
      if (!isStacked(this.tree, r)) return false;
      this.openRows[r] = this.openRows[r] ? 0 : 1;
      return true;
    }
    const e = this.expanded;
    if (!e || i >= e.length) return false;
    e[i] = e[i] ? 0 : 1;
    return true;
  }

  setAll(v) {
    if (!this.tree) return false;
    this.expanded.fill(v);
    return true;
  }

  /** Make Variable row `r` listed (clearing a filter that hides it, opening its modules); its item id. */
  reveal(r) {
    const tree = this.tree;
    if (!tree || !Number.isInteger(r) || r < 0 || r >= tree.R) return null;
    if (this.match && !this.match[r]) {
      this.query = "";
      this.typeFilter = null;
      this.refilter();
    }
    const id = tree.N + r;
    const e = this.expanded;
    for (const p of ancestors(tree, id)) e[p] = 1;
    if (tree.rowLayerOf[r] >= 0) this.openRows[tree.rowLayerOf[r]] = 1;
    return id;
  }

  /** The listed items, the empty-table text and the "n of m" match count. */
  layout() {
    const tree = this.tree;
    if (!this.kids) this.kids = sortKids(tree, this.sort && this.sort.column, this.sort && this.sort.dir);
    const items = flatten(tree, this.expanded, this.kids, this.match, this.openRows);
    let emptyText = "";
    if (tree.R === 0 && tree.N === 0) emptyText = "no Variables";
    else if (this.match && items.length === 0) emptyText = "no Variable matches the filter";
    let matches = "";
    if (this.match) {
      let n = 0;
      for (let r = 0; r < tree.R; r++) n += this.match[r];
      matches = `${n} of ${tree.R}`;
    }
    return { items, emptyText, matches };
  }
}
