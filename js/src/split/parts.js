// @ts-check
// The split report's pieces: the head line, the header cells (one per filter, and the
// remainder), the rows with their marks, and the problems list. Every user string is text.

import { h } from "../shared/dom.js";
import { typeCell } from "../shared/colors.js";
import { fmtBytes, fmtCount, fmtShape } from "../shared/format.js";
import { REST, filterTitle, markOf, rowKind } from "./data.js";

const PROBLEMS_SHOWN = 12; // problems listed before a "more" button
const PROBLEMS_STEP = 500; // how many more each click lists

/** The head line: root class, how many Variables and filters, bytes, and the remainder. */
export function headParts(doc, prep) {
  const sep = () => h(doc, "span", { class: "sep" }, "\u00B7");
  const n = prep.n;
  const k = prep.filters.length;
  const total = prep.rows.nbytes.reduce((s, b) => s + (b || 0), 0);
  const parts = [
    h(doc, "span", { class: "root" }, prep.rootType || "(object)"),
    sep(),
    h(doc, "span", { class: "dim nnx-split-count" }, `${fmtCount(n)} Variable${n === 1 ? "" : "s"}`),
    sep(),
    h(doc, "span", { class: "dim nnx-split-nfilters" }, `${fmtCount(k)} filter${k === 1 ? "" : "s"}`),
    sep(),
    h(doc, "span", { class: "dim", title: `${fmtCount(total)} bytes` }, fmtBytes(total)),
  ];
  if (prep.rest.count) {
    parts.push(sep(), h(doc, "span", { class: "rest" }, `${fmtCount(prep.rest.count)} in no filter`));
  }
  return parts;
}

/** The header cell of column `c`; a filter's (or the remainder's) is pressed when it is `active`. */
export function headerCell(doc, prep, c, active) {
  if (c.kind === "var") {
    const title = c.title ? `${c.label}: ${c.title}` : c.label;
    return h(doc, "th", { "data-col": c.id, class: c.num ? "num" : null, scope: "col", title }, c.label);
  }
  if (c.kind === "filter") {
    const f = c.filter;
    return h(
      doc,
      "th",
      {
        class: `nnx-split-filter f-${f.index}`,
        "data-filter": f.index,
        "data-col": c.id,
        scope: "col",
        title: filterTitle(f),
        "aria-pressed": active === f.index ? "true" : "false",
        role: "button",
      },
      h(doc, "div", { class: "nm" }, f.name),
      h(doc, "div", { class: "lb" }, f.label),
      h(doc, "div", { class: "ct" }, `${fmtCount(f.count)} \u00B7 ${fmtBytes(f.bytes)}`),
    );
  }
  return h(
    doc,
    "th",
    {
      class: "nnx-split-rest",
      "data-filter": REST,
      "data-col": REST,
      scope: "col",
      role: "button",
      title:
        "Variables no filter matched: nnx.split raises for them (add `...` as the last filter to collect them)\nclick: show only these",
      "aria-pressed": active === REST ? "true" : "false",
    },
    h(doc, "div", { class: "nm" }, "remainder"),
    h(doc, "div", { class: "lb" }, "no filter"),
    h(doc, "div", { class: "ct" }, `${fmtCount(prep.rest.count)} \u00B7 ${fmtBytes(prep.rest.bytes)}`),
  );
}

/** Row `r`: path (and aliases), type, shape, dtype, bytes, and a mark under each filter of `cols`. */
export function rowEl(doc, prep, cols, r) {
  const rows = prep.rows;
  const path = rows.path[r];
  const kind = rowKind(prep, r);
  const tr = h(doc, "tr", { class: `nnx-split-row${kind ? ` ${kind}` : ""}`, "data-path": path, "data-row": r });
  const aliases = rows.aliases[r];
  let title = path || "(root)";
  if (aliases.length) title += `\nalso reachable as: ${aliases.join(", ")}`;
  // (styles.js keepEndCss: a path too long for the column loses its start, not its end)
  const text = h(doc, "span", { class: "pt" }, path || "(root)");
  if (aliases.length) text.appendChild(h(doc, "span", { class: "alias" }, `= ${aliases.join(", ")}`));
  const pathTd = h(doc, "td", { class: "c-path", title }, text);
  const type = rows.type[r];
  const nbytes = rows.nbytes[r];
  const shape = fmtShape(rows.shape[r]);
  const own = {
    path: pathTd,
    type: typeCell(doc, type),
    shape: h(doc, "td", { class: "c-shape num", title: shape || null }, shape),
    dtype: h(doc, "td", { class: "c-dtype", title: rows.dtype[r] ?? null }, rows.dtype[r] ?? ""),
    bytes: h(
      doc,
      "td",
      { class: "c-bytes num", title: nbytes === null ? null : `${fmtBytes(nbytes)}: ${fmtCount(nbytes)} bytes` },
      fmtBytes(nbytes),
    ),
  };
  for (const c of cols) {
    if (c.kind === "var") {
      tr.appendChild(own[c.id]);
    } else if (c.kind === "filter") {
      const f = c.filter;
      const mark = markOf(prep, r, f.index);
      const td = h(doc, "td", { class: `fc f-${f.index}` });
      if (mark === "taken") {
        td.appendChild(h(doc, "span", { class: "nnx-mark taken", title: `taken by ${f.name} (${f.label})` }));
      } else if (mark === "shadowed") {
        const by = prep.filters[rows.taken_by[r]];
        td.appendChild(
          h(doc, "span", {
            class: "nnx-mark shadowed",
            title: `matched by ${f.label} too, but ${by ? `${by.name} (${by.label})` : "an earlier filter"} took it first`,
          }),
        );
      }
      tr.appendChild(td);
    } else if (c.kind === "rest") {
      const td = h(doc, "td", { class: "c-rest" });
      if (kind === "remainder")
        td.appendChild(h(doc, "span", { class: "nnx-mark rest", title: "no filter matched this Variable" }));
      tr.appendChild(td);
    }
  }
  return tr;
}

/** The problems list: the first lines, then a button listing more. `fill(lines)` restarts it. */
export function createProblems(doc) {
  const el = h(doc, "ul", { class: "nnx-split-problems", "aria-label": "problems with this split" });
  let lines = [];
  let shownMax = PROBLEMS_SHOWN;

  function draw() {
    el.hidden = lines.length === 0;
    const shown = Math.min(lines.length, shownMax);
    const lis = lines.slice(0, shown).map((line) => h(doc, "li", null, line));
    if (shown < lines.length) {
      const left = lines.length - shown;
      const more = h(
        doc,
        "button",
        { type: "button" },
        `${fmtCount(left)} more\u2026${left > PROBLEMS_STEP ? ` (show ${PROBLEMS_STEP})` : ""}`,
      );
      more.addEventListener("click", () => {
        shownMax += PROBLEMS_STEP;
        draw();
      });
      lis.push(h(doc, "li", { class: "more" }, more));
    }
    el.replaceChildren(...lis);
  }

  return {
    el,
    fill(next) {
      lines = next;
      shownMax = PROBLEMS_SHOWN;
      draw();
    },
  };
}
