// The summary widget's pure parts: the tree from depths, sort among siblings, filter with
// ancestors, collapse, the FLOPs share.
import test from "node:test";
import assert from "node:assert/strict";
import {
  allParents,
  classWidth,
  COLUMNS,
  columnsFor,
  nextSort,
  ownPath,
  prepare,
  share,
  showingText,
  visibleRows,
} from "../src/summary/data.js";

const row = (path_text, depth, flops, cls = "Linear") => ({ path_text, depth, flops, cls, params: flops / 10 });
const PAYLOAD = {
  total_flops: 100,
  rows: [
    row("(Net)", 0, 100, "Net"),
    row("a", 1, 10),
    row("b", 1, 60, "Block"),
    row("b.x", 2, 20),
    row("b.y", 2, 40, "Attention"),
    row("c", 1, 30),
  ],
};
const paths = (prep, items) => items.map((i) => prep.rows[i].path_text);

test("parents and children come from the depths in call order", () => {
  const prep = prepare(PAYLOAD);
  assert.deepEqual(prep.parent, [-1, 0, 0, 2, 2, 0]);
  assert.deepEqual(prep.kids[0], [1, 2, 5]);
  assert.deepEqual(prep.roots, [0]);
  assert.deepEqual([...allParents(prep)], [0, 2]);
});

test("sorting orders siblings only, descending first", () => {
  const prep = prepare(PAYLOAD);
  let sort = nextSort(null, "flops");
  assert.deepEqual(sort, { column: "flops", dir: "desc" });
  assert.deepEqual(paths(prep, visibleRows(prep, { sort }).items), ["(Net)", "b", "b.y", "b.x", "c", "a"]);
  sort = nextSort(sort, "flops");
  assert.deepEqual(paths(prep, visibleRows(prep, { sort }).items), ["(Net)", "a", "c", "b", "b.x", "b.y"]);
  assert.equal(nextSort(sort, "flops"), null);
  assert.equal(nextSort(null, "path"), null); // not sortable
});

test("a filter keeps the matches and their ancestors, opened", () => {
  const prep = prepare(PAYLOAD);
  const out = visibleRows(prep, { query: "attention", collapsed: new Set([2]) });
  assert.deepEqual(paths(prep, out.items), ["(Net)", "b", "b.y"]);
  assert.equal(out.matches, 1);
  assert.match(showingText(prep, out.items.length, out.matches, "attention"), /1 module call match/);
  assert.deepEqual(visibleRows(prep, { query: "nothing" }).items, []);
});

test("collapsed rows hide their calls", () => {
  const prep = prepare(PAYLOAD);
  const out = visibleRows(prep, { collapsed: new Set([2]) });
  assert.deepEqual(paths(prep, out.items), ["(Net)", "a", "b", "c"]);
  assert.equal(showingText(prep, out.items.length, out.matches, ""), "4 of 6 module calls listed");
});

test("share of FLOPs and the backward column", () => {
  const prep = prepare(PAYLOAD);
  assert.equal(share(prep, 0), 1);
  assert.equal(share(prep, 4), 0.4);
  assert.equal(share(prepare({ rows: [row("m", 0, 5)], total_flops: 0 }), 0), 0);
  assert.ok(!columnsFor({}).some((c) => c.id === "bwd"));
  assert.ok(columnsFor({ backward: true }).some((c) => c.id === "bwd"));
});

test("a row shows what its path adds to its parent's; the root's children and strangers in full", () => {
  const prep = prepare({
    rows: [
      row("(Net)", 0, 0, "Net"),
      row("blocks", 1, 0, "Sequential"),
      row("blocks.layers[0]", 2, 0, "Block"),
      row("blocks.layers[0].mha", 3, 0, "MultiHeadAttention"),
      row("head", 3, 0), // a module called from inside another: not under its path
      row("blocksx", 2, 0), // a prefix that is not a path step
      row("layers", 1, 0, "List"),
      row("layers[2]", 2, 0),
    ],
  });
  assert.deepEqual(
    prep.rows.map((_, i) => ownPath(prep, i)),
    ["(Net)", "blocks", "layers[0]", "mha", "head", "blocksx", "layers", "[2]"],
  );
});

test("under a module called more than once, a row shows what its path adds to the module's path", () => {
  // flax's translation Transformer calls its positional_embedding twice: "(call 1)", "(call 2)"
  const prep = prepare({
    rows: [
      row("(TransformerModel)", 0, 0, "TransformerModel"),
      row("positional_embedding (call 1)", 1, 0, "PositionalEmbedding"),
      row("positional_embedding.token_embeddings", 2, 0, "Embed"),
      row("positional_embedding.position_embeddings (call 1)", 2, 0, "Embed"),
      row("positional_embedding (call 2)", 1, 0, "PositionalEmbedding"),
      row("positional_embedding.token_embeddings (call 2)", 2, 0, "Embed"),
      row("blocks[0] (call 12)", 1, 0),
      row("blocks[0][1]", 2, 0),
    ],
  });
  assert.deepEqual(
    prep.rows.map((_, i) => ownPath(prep, i)),
    [
      "(TransformerModel)",
      "positional_embedding (call 1)",
      "token_embeddings",
      "position_embeddings (call 1)",
      "positional_embedding (call 2)",
      "token_embeddings (call 2)",
      "blocks[0] (call 12)",
      "[1]",
    ],
  );
});

test("the class column is as wide as its longest class name, within bounds", () => {
  const cls = (payload) => columnsFor(payload).find((c) => c.id === "cls").width;
  assert.equal(cls({}), 100);
  assert.equal(cls({ rows: [{ cls: "Linear" }] }), 100);
  const long = cls({ rows: [{ cls: "Linear" }, { cls: "TokenAndPositionEmbedding" }] });
  assert.ok(long >= 25 * 7 && long <= 220, String(long));
  assert.equal(classWidth({ rows: [{ cls: "X".repeat(80) }] }), 220);
  assert.equal(COLUMNS.find((c) => c.id === "cls").width, 100); // the table's own columns untouched
});
