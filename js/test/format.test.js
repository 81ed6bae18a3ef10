import test from "node:test";
import assert from "node:assert/strict";
import {
  fmtNum,
  fmtBytes,
  fmtShape,
  fmtCount,
  fmtNonfinite,
  fmtMs,
  fmtClock,
  pathText,
  keyText,
  pyRepr,
  isIdentifier,
  shapeSize,
} from "../src/shared/format.js";

test("fmtNum: 4 significant digits, trimmed", () => {
  assert.equal(fmtNum(0.264), "0.264");
  assert.equal(fmtNum(1.665), "1.665");
  assert.equal(fmtNum(1), "1");
  assert.equal(fmtNum(1.0001), "1");
  assert.equal(fmtNum(-0.26401), "-0.264");
  assert.equal(fmtNum(123.456), "123.5");
  assert.equal(fmtNum(12345), "1.235e+4");
  assert.equal(fmtNum(1234.5), "1235");
  assert.equal(fmtNum(0.001), "0.001");
  assert.equal(fmtNum(0.0012346), "0.001235");
  assert.equal(fmtNum(0), "0");
  assert.equal(fmtNum(-0), "0");
});

test("fmtNum: exponent form for |x| < 1e-3 and |x| >= 1e5", () => {
  assert.equal(fmtNum(0.00012346), "1.235e-4");
  assert.equal(fmtNum(-3.5e-5), "-3.5e-5");
  assert.equal(fmtNum(1e-7), "1e-7");
  assert.equal(fmtNum(123456), "1.235e+5");
  assert.equal(fmtNum(1e5), "1e+5");
  assert.equal(fmtNum(-2.5e10), "-2.5e+10");
  assert.equal(fmtNum(9999.9), "1e+4"); // rounds up past 4 digits
});

test("fmtNum: missing and non-finite", () => {
  assert.equal(fmtNum(null), "");
  assert.equal(fmtNum(undefined), "");
  assert.equal(fmtNum(NaN), "NaN");
  assert.equal(fmtNum(Infinity), "inf");
  assert.equal(fmtNum(-Infinity), "-inf");
});

test("fmtCount and fmtNonfinite", () => {
  assert.equal(fmtCount(12), "12");
  assert.equal(fmtCount(3.7), "4");
  assert.equal(fmtCount(null), "");
  assert.equal(fmtNonfinite(2, 1), "2 NaN, 1 Inf");
  assert.equal(fmtNonfinite(0, 3), "3 Inf");
  assert.equal(fmtNonfinite(4, 0), "4 NaN");
  assert.equal(fmtNonfinite(0, 0), "");
  assert.equal(fmtNonfinite(null, null), "");
});

test("fmtBytes: binary units, one decimal above 1023 B (render.format_bytes; the corpus is in pyformat.test.js)", () => {
  assert.equal(fmtBytes(0), "0 B");
  assert.equal(fmtBytes(84), "84 B");
  assert.equal(fmtBytes(1023), "1023 B");
  assert.equal(fmtBytes(1024), "1.0 KiB");
  assert.equal(fmtBytes(1536), "1.5 KiB");
  assert.equal(fmtBytes(12.3 * 2 ** 20), "12.3 MiB");
  assert.equal(fmtBytes(512 * 2 ** 20), "512.0 MiB");
  assert.equal(fmtBytes(1023.96 * 1024), "1.0 MiB"); // the unit is chosen after rounding
  assert.equal(fmtBytes(2 ** 30), "1.0 GiB");
  assert.equal(fmtBytes(5 * 2 ** 40), "5.0 TiB");
  assert.equal(fmtBytes(null), "");
});

test("fmtShape and shapeSize", () => {
  assert.equal(fmtShape([512, 8, 64]), "(512, 8, 64)");
  assert.equal(fmtShape([3]), "(3,)");
  assert.equal(fmtShape([]), "()");
  assert.equal(fmtShape(null), "");
  assert.equal(shapeSize([2, 3]), 6);
  assert.equal(shapeSize([]), 1);
  assert.equal(shapeSize(null), null);
});

test("fmtMs and fmtClock", () => {
  assert.equal(fmtMs(3.21), "3.2 ms");
  assert.equal(fmtMs(41.4), "41 ms");
  assert.equal(fmtMs(1250), "1.25 s");
  assert.equal(fmtMs(null), "");
  assert.match(fmtClock(1700000000), /^\d\d:\d\d:\d\d$/);
  assert.equal(fmtClock(null), "");
});

test("path text: Python attribute/index access", () => {
  assert.equal(pathText(["blocks", 0, "attn", "query", "kernel"]), "blocks[0].attn.query.kernel");
  assert.equal(pathText(["d", "<script>"]), "d['<script>']");
  assert.equal(pathText(["d", "<script>", "class"]), "d['<script>']['class']"); // keyword
  assert.equal(pathText([0, "w"]), "[0].w");
  assert.equal(pathText(["a b"]), "['a b']");
  assert.equal(pathText(["x", "1abc"]), "x['1abc']");
  assert.equal(pathText(["x", ""]), "x['']");
  assert.equal(pathText(["_private", "ünïcode"]), "_private.ünïcode");
  assert.equal(pathText([]), "");
  assert.equal(keyText("kernel", true), "kernel");
  assert.equal(keyText("kernel", false), ".kernel");
  assert.equal(keyText(-1, false), "[-1]");
});

test("path text: quoting like Python repr()", () => {
  assert.equal(pyRepr("a'b"), `"a'b"`);
  assert.equal(pyRepr(`a'b"c`), `'a\\'b"c'`);
  assert.equal(pyRepr("back\\slash"), "'back\\\\slash'");
  assert.equal(pyRepr("line\nbreak\t"), "'line\\nbreak\\t'");
  assert.equal(pyRepr("\x01"), "'\\x01'");
  assert.equal(pathText(["d", "it's"]), `d["it's"]`);
  assert.ok(isIdentifier("kernel"));
  assert.ok(!isIdentifier("None"));
  assert.ok(!isIdentifier("lambda"));
  assert.ok(!isIdentifier("a-b"));
});
