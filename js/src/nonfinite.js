// @ts-check
// nnx_lab non-finite report: an anywidget front end for NonfiniteView. The verdict (forward,
// backward or input; module path, class and method), the primitive and source line, the bad
// elements' counts and first positions, and the module calls on the path to the culprit with their
// inputs' and outputs' statistics and non-finite Variables. Python writes every number and label;
// every user string goes into the page as text. The table wraps its cells: it never scrolls sideways.

import { h } from "./shared/dom.js";
import { THEME, panelFrameCss } from "./shared/styles.js";

const { FG, MUTED, BG2, BORDER, ERROR, OK, STRIPE, MONO } = THEME;
const R = ".nnx-lab-nonfinite-view";

export function nonfiniteCss() {
  return `${panelFrameCss(R)}
${R} .nnx-nf-verdict{font-weight:600;overflow-wrap:anywhere}
${R} .nnx-nf-verdict.bad{color:${ERROR}}
${R} .nnx-nf-verdict.finite{color:${OK}}
${R} .nnx-nf-line{font-family:${MONO};overflow-wrap:anywhere;color:${FG}}
${R} .nnx-nf-note{color:${MUTED};overflow-wrap:anywhere;margin-top:4px}
${R} .nnx-nf-caption{color:${MUTED};margin:6px 0 2px}
${R} table{border-collapse:collapse;table-layout:fixed;width:100%;max-width:100%}
${R} th{background:${BG2};text-align:left;font-weight:600;padding:2px 6px;border-bottom:1px solid ${BORDER}}
${R} td{padding:2px 6px;vertical-align:top;overflow-wrap:anywhere;white-space:pre-wrap;border-bottom:1px solid ${BORDER}}
${R} td.stats{font-family:${MONO};font-size:11px}
${R} tr.culprit td{background:${STRIPE};font-weight:600}
${R} tr.culprit td.stats{font-weight:normal}`;
}

// the bad table's column widths (%) by Python's column key: the argument's path and the finite values'
// statistics get the room, the counts little; a key not here shares what is left
const WIDTHS = { name: 26, array: 13, bad: 10, nan: 6, posinf: 6, neginf: 6, first: 10, finite: 23 };

/**
 * @param {string} key
 * @param {string[][]} columns
 */
function colWidth(key, columns) {
  const known = columns.filter(([k]) => k in WIDTHS);
  if (known.length !== columns.length) return `width:${(100 / columns.length).toFixed(2)}%`;
  const total = known.reduce((sum, [k]) => sum + WIDTHS[/** @type {keyof WIDTHS} */ (k)], 0);
  return `width:${((100 * WIDTHS[/** @type {keyof WIDTHS} */ (key)]) / total).toFixed(2)}%`;
}

/**
 * The panel for one payload (Python's NonfiniteReport.payload()).
 * @param {Document} doc
 * @param {Partial<import("./shared/wire").NonfiniteReport>} p the synced trait (traits.py)
 */
export function drawReport(doc, p) {
  const direction = p.direction || "finite";
  const parts = [
    h(doc, "style", null, nonfiniteCss()),
    h(
      doc,
      "div",
      { class: `nnx-nf-verdict ${direction === "finite" ? "finite" : "bad"}`, "data-direction": direction },
      p.verdict || "",
    ),
  ];
  const lines = (p.lines || []).map((line) => h(doc, "div", { class: "nnx-nf-line" }, line));
  // the input verdict's one line counts the leaves past its table: it follows the table
  if (direction !== "input") parts.push(...lines);
  if ((p.bad || []).length) {
    // Python's columns: [key, label]; each row's cells by key (the input verdict's: the argument, its
    // array, bad of size, NaN, +Inf, -Inf, first bad index, finite values)
    const columns = p.bad_columns || [];
    parts.push(h(doc, "div", { class: "nnx-nf-caption" }, p.bad_caption || "bad elements"));
    const rows = p.bad.map((b) => h(doc, "tr", null, ...columns.map(([key]) => h(doc, "td", null, b[key] ?? ""))));
    const head = h(doc, "tr", null, ...columns.map(([, label]) => h(doc, "th", null, label)));
    parts.push(
      h(
        doc,
        "table",
        { class: `nnx-nf-bad${direction === "input" ? " nnx-nf-input" : ""}` },
        h(doc, "colgroup", null, ...columns.map(([key]) => h(doc, "col", { style: colWidth(key, columns) }))),
        h(doc, "thead", null, head),
        h(doc, "tbody", null, ...rows),
      ),
    );
  }
  if (direction === "input") parts.push(...lines);
  if ((p.rows || []).length) {
    parts.push(h(doc, "div", { class: "nnx-nf-caption" }, "module calls on the path (forward values)"));
    const cols = h(
      doc,
      "colgroup",
      null,
      h(doc, "col", { style: "width:18%" }),
      h(doc, "col", { style: "width:14%" }),
      h(doc, "col", { style: "width:29%" }),
      h(doc, "col", { style: "width:29%" }),
      h(doc, "col", { style: "width:10%" }),
    );
    const head = h(
      doc,
      "tr",
      null,
      ...["module", "call", "inputs", "outputs", "non-finite Variables"].map((t) => h(doc, "th", null, t)),
    );
    const rows = p.rows.map((r) =>
      h(
        doc,
        "tr",
        { class: r.culprit ? "nnx-nf-call culprit" : "nnx-nf-call" },
        h(doc, "td", null, r.path),
        h(doc, "td", null, r.call),
        h(doc, "td", { class: "stats" }, r.inputs),
        h(doc, "td", { class: "stats" }, r.outputs),
        h(doc, "td", null, r.variables),
      ),
    );
    parts.push(
      h(doc, "table", { class: "nnx-nf-calls" }, cols, h(doc, "thead", null, head), h(doc, "tbody", null, ...rows)),
    );
  }
  if (p.note) parts.push(h(doc, "div", { class: "nnx-nf-note" }, p.note));
  return h(doc, "div", { class: "nnx-lab-nonfinite-view" }, ...parts);
}

/**
 * @typedef {object} NonfiniteTraits the widget's synced traits (nnx_lab/widgets/nonfinite.py, typed by traits.py)
 * @property {import("./shared/wire").NonfiniteReport} report
 */

/** @param {import("./shared/model").RenderProps<NonfiniteTraits>} props */
function render({ model, el }) {
  const doc = el.ownerDocument || document;
  const draw = () => el.replaceChildren(drawReport(doc, model.get("report") || {}));
  draw();
  model.on("change:report", draw);
  return () => model.off("change:report", draw);
}

export default { render };
