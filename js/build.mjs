// Bundle each widget's front end into ../nnx_lab/static/ (one ES module per entry).
// Add later widgets to ENTRIES: {in: source under src/, out: file name under nnx_lab/static/}.
import * as esbuild from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.resolve(here, "..", "nnx_lab", "static");

export const ENTRIES = [
  { in: "src/viewer.js", out: "viewer" },
  { in: "src/split.js", out: "split" },
  { in: "src/capture.js", out: "capture" },
  { in: "src/views.js", out: "views" },
  { in: "src/summary.js", out: "summary" },
  { in: "src/compare.js", out: "compare" },
  { in: "src/memory.js", out: "memory" },
  { in: "src/nonfinite.js", out: "nonfinite" },
];

const watch = process.argv.includes("--watch");
const options = {
  entryPoints: ENTRIES.map((e) => ({ in: path.join(here, e.in), out: e.out })),
  outdir,
  bundle: true,
  format: "esm",
  target: "es2020",
  minify: true,
  sourcemap: false,
  legalComments: "none",
  logLevel: "info",
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
