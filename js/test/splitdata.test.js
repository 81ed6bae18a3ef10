// The split report's pure parts: columns, marks, row kinds, remainder, the header toggle.
import test from "node:test";
import assert from "node:assert/strict";
import {
  REST,
  columns,
  filterTitle,
  hasRemainder,
  markOf,
  prepare,
  rowKind,
  showingText,
  tableWidth,
  toggleActive,
  visibleRows,
} from "../src/split/data.js";
import { FILTER_COLORS, filterColor } from "../src/shared/colors.js";
import { filterCss } from "../src/split/styles.js";
import { partial, shadowing } from "./splitfixtures.js";

test("prepare counts taken and shadowed per filter, and the remainder", () => {
  const p = prepare(shadowing());
  assert.equal(p.n, 8);
  assert.deepEqual(
    p.filters.map((f) => [f.name, f.taken, f.shadowed]),
    [
      ["param", 4, 0],
      ["variable", 4, 4],
      ["nothing", 0, 0],
    ],
  );
  assert.deepEqual(p.rest, { count: 0, bytes: 0 });
  assert.equal(hasRemainder(p), false);
  const q = prepare(partial());
  assert.deepEqual(q.rest, { count: 2, bytes: 12 });
  assert.equal(hasRemainder(q), true);
});

test("user names (names[1:]) head the filter columns", () => {
  const rep = shadowing();
  rep.names = ["gd", "params", "rest", "none"];
  assert.deepEqual(
    prepare(rep).filters.map((f) => f.name),
    ["params", "rest", "none"],
  );
  delete rep.names;
  assert.deepEqual(
    prepare(rep).filters.map((f) => f.name),
    ["param", "variable", "nothing"],
  );
});

test("prepare survives missing and malformed fields", () => {
  for (const bad of [undefined, null, {}, { rows: null, filters: null }, { rows: { path: ["a"] } }]) {
    const p = prepare(bad);
    assert.ok(p.n <= 1);
    assert.deepEqual(visibleRows(p, null).length, p.n);
  }
  const p = prepare({ rows: { path: ["a"] } });
  assert.equal(rowKind(p, 0), "remainder");
  assert.deepEqual(p.rows.matched_by, [[]]);
});

test("marks: filled where a filter took the Variable, hollow where it matched but was shadowed", () => {
  const p = prepare(shadowing());
  const kernel = 1;
  const mean = 3;
  assert.equal(markOf(p, kernel, 0), "taken");
  assert.equal(markOf(p, kernel, 1), "shadowed");
  assert.equal(markOf(p, kernel, 2), null);
  assert.equal(markOf(p, mean, 0), null);
  assert.equal(markOf(p, mean, 1), "taken");
  const q = prepare(partial());
  assert.equal(markOf(q, 6, 0), null);
  assert.equal(markOf(q, 6, 1), null);
});

test("row kinds: shadowed, remainder, plain", () => {
  const p = prepare(shadowing());
  assert.deepEqual(
    p.rows.path.map((_, r) => rowKind(p, r)),
    ["shadowed", "shadowed", "shadowed", "", "shadowed", "", "", ""],
  );
  const q = prepare(partial());
  assert.deepEqual(
    q.rows.path.map((_, r) => rowKind(q, r)),
    ["", "", "", "", "", "", "remainder", "remainder"],
  );
});

test("columns: the Variable's, one per filter, the remainder only when there is one", () => {
  const ids = (rep) => columns(prepare(rep)).map((c) => c.id);
  assert.deepEqual(ids(shadowing()), ["path", "type", "shape", "dtype", "bytes", "f-0", "f-1", "f-2"]);
  assert.deepEqual(ids(partial()), ["path", "type", "shape", "dtype", "bytes", "f-0", "f-1", REST]);
  const cols = columns(prepare(partial()));
  assert.equal(cols[5].kind, "filter");
  assert.equal(cols[5].filter.label, "nnx.Param");
  assert.equal(cols[7].kind, "rest");
  assert.ok(tableWidth(cols) > 600);
});

test("header toggle and the rows each filter shows", () => {
  const p = prepare(shadowing());
  assert.equal(toggleActive(null, 1), 1);
  assert.equal(toggleActive(1, 1), null);
  assert.equal(toggleActive(1, 0), 0);
  assert.equal(toggleActive(REST, REST), null);
  assert.deepEqual(visibleRows(p, null), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(visibleRows(p, 0), [0, 1, 2, 4]);
  assert.deepEqual(visibleRows(p, 1), [0, 1, 2, 3, 4, 5, 6, 7]); // took 4, shadowed 4
  assert.deepEqual(visibleRows(p, 2), []);
  assert.deepEqual(visibleRows(prepare(partial()), REST), [6, 7]);
  assert.match(showingText(p, null, 8), /^8 Variables/);
  assert.match(
    showingText(p, 1, 8),
    /^variable: 4 taken \+ 4 matched but taken by an earlier filter \(8 of 8 Variables\)/,
  );
  assert.match(showingText(prepare(partial()), REST, 2), /^remainder: 2 of 8 Variables/);
  assert.match(filterTitle(p.filters[0]), /filter 1: nnx.Param\nstate: param\ntook 4 Variables \(Param 4\)/);
});

test("filter colours: the static HTML's eight first, then distinct hues", () => {
  assert.equal(filterColor(0), "#1e88e5");
  assert.equal(filterColor(0, 0.5), "rgba(30,136,229,0.5)");
  const many = Array.from({ length: 40 }, (_, i) => filterColor(i));
  assert.equal(new Set(many).size, 40);
  assert.deepEqual(many.slice(0, 8), FILTER_COLORS);
  const css = filterCss(3);
  assert.ok(css.includes(".nnx-lab-split-view .f-2{--fc:#fb8c00"));
  assert.ok(!css.includes(".f-3{"));
});
