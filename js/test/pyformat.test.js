// The browser's formatting is nnx_lab.core.render's: the same text for every value of a corpus
// (inputs and Python's output written by tools/js_fixtures.py).
import test from "node:test";
import assert from "node:assert/strict";
import { fmtBytes, fmtNum, fmtShape, pathText } from "../src/shared/format.js";
import { fixture, number } from "./generated.js";

const cases = fixture("format");

test("fmtNum writes every statistic as render.format_number does", () => {
  assert.ok(cases.numbers.length > 40);
  for (const [input, expected] of cases.numbers) assert.equal(fmtNum(number(input)), expected, `fmtNum(${input})`);
});

test("fmtBytes writes every size as render.format_bytes does", () => {
  for (const [input, expected] of cases.bytes) assert.equal(fmtBytes(number(input)), expected, `fmtBytes(${input})`);
});

test("fmtShape writes shapes as render.format_shape does", () => {
  for (const [shape, expected] of cases.shapes) assert.equal(fmtShape(shape), expected);
});

test("pathText writes paths as core.tree.path_text does", () => {
  for (const [keys, expected] of cases.paths) assert.equal(pathText(keys), expected, JSON.stringify(keys));
});
