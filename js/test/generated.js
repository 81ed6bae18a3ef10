// The fixtures tools/js_fixtures.py writes from nnx_lab's Python (real payloads of real models,
// and Python's formatting of a corpus of values). tests/test_packaging.py runs the script before
// these tests and passes the directory in NNX_LAB_FIXTURES; by hand:
//   python ../tools/js_fixtures.py && node --test test/
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const FIXTURES = process.env.NNX_LAB_FIXTURES || path.join(here, "generated");

function read(name) {
  return JSON.parse(readFileSync(path.join(FIXTURES, `${name}.json`), "utf8"));
}

if (!existsSync(path.join(FIXTURES, "manifest.json"))) {
  throw new Error(
    `no generated fixtures in ${FIXTURES}: run python tools/js_fixtures.py (from the repository root) first`,
  );
}
const manifest = read("manifest");

/**
 * A fresh copy of fixture `name`, or null when this Python could not make it (then
 * `skipReason(name)` says why: a flax too old for the feature).
 */
export function fixture(name) {
  if (!(name in manifest))
    throw new Error(`unknown fixture ${name}; tools/js_fixtures.py makes ${Object.keys(manifest).join(", ")}`);
  return manifest[name] ? null : read(name);
}

/** Why fixture `name` is missing (for node:test's `skip` option), or false. */
export function skipReason(name) {
  if (!(name in manifest)) throw new Error(`unknown fixture ${name}`);
  return manifest[name] || false;
}

/** A float written by tools/js_fixtures.py as text ("NaN", "Infinity", "-0.0", repr of a double). */
export function number(text) {
  return Number(text);
}

/**
 * node:test's `test`, skipping (with the reason) when any of the fixtures `names` is missing:
 * `const test = testWith(nodeTest, "views_mixed")` at the top of a file whose tests need it.
 */
export function testWith(nodeTest, ...names) {
  const reason = names.map(skipReason).find(Boolean);
  return (title, fn) => (reason ? nodeTest(title, { skip: reason }, fn) : nodeTest(title, fn));
}
