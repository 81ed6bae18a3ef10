// nnx_lab split report: an anywidget front end for SplitReportView. Which Variables each filter
// of an `nnx.split` takes (filled mark), which it matches but an earlier filter took (hollow
// mark), and what no filter matched (the remainder). Uses only anywidget's model API (get, on,
// off), and puts every user string into the page as text.

import { copyButton } from "./shared/copy.js";
import { h, setText } from "./shared/dom.js";
import { typeColor } from "./shared/colors.js";
import { fmtBytes, fmtCount, fmtShape } from "./shared/format.js";
import { filterCss, splitCss } from "./split/styles.js";
import {
  REST, columns, filterTitle, markOf, prepare, rowKind, showingText, tableWidth, toggleActive, visibleRows,
} from "./split/data.js";
import { createWindowedTable, drawWindow, setColspan, watchWindow } from "./shared/table.js";

const PROBLEMS_SHOWN = 12; // problems listed before a "more" button
const PROBLEMS_STEP = 500; // how many more each click lists

function render({ model, el }) {
  const doc = el.ownerDocument || document;
  const cleanups = [];

  let prep = prepare({});
  let cols = [];
  let active = null; // null | filter index | REST
  let items = []; // row indexes shown
  let problemsShown = PROBLEMS_SHOWN;
  let rendered = new Map(); // row index -> tr (only the window)

  // --- DOM -----------------------------------------------------------------------------------
  const root = h(doc, "div", { class: "nnx-lab-split-view" });
  const style = h(doc, "style", null, splitCss());
  const filterStyle = h(doc, "style");
  const head = h(doc, "div", { class: "nnx-split-head" });
  const codeText = h(doc, "code", { class: "nnx-split-code-text" });
  const copy = copyButton(doc, codeText, "nnx-split-copy", () => prep.code);
  const codeBox = h(doc, "div", { class: "nnx-split-code" }, codeText, copy.button);
  const problems = h(doc, "ul", { class: "nnx-split-problems", "aria-label": "problems with this split" });
  const showing = h(doc, "div", { class: "nnx-split-showing", role: "status" });
  const colgroup = h(doc, "colgroup");
  const headRow = h(doc, "tr");
  const thead = h(doc, "thead", null, headRow);
  const { scroller, table, empty, spacers } = createWindowedTable(doc, {
    tableClass: "nnx-split-table", colgroup, thead });
  root.append(style, filterStyle, head, codeBox, problems, showing, scroller);
  el.replaceChildren(root);

  // --- pieces --------------------------------------------------------------------------------

  function fillHead() {
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
    head.replaceChildren(...parts);
  }

  function fillProblems() {
    const lines = prep.problems;
    problems.hidden = lines.length === 0;
    const shown = Math.min(lines.length, problemsShown);
    const lis = lines.slice(0, shown).map((line) => h(doc, "li", null, line));
    if (shown < lines.length) {
      const left = lines.length - shown;
      const more = h(doc, "button", { type: "button" },
        `${fmtCount(left)} more\u2026${left > PROBLEMS_STEP ? ` (show ${PROBLEMS_STEP})` : ""}`);
      more.addEventListener("click", () => {
        problemsShown += PROBLEMS_STEP;
        fillProblems();
      });
      lis.push(h(doc, "li", { class: "more" }, more));
    }
    problems.replaceChildren(...lis);
  }

  function headerCell(c) {
    if (c.kind === "var") {
      return h(doc, "th", { "data-col": c.id, class: c.num ? "num" : null, scope: "col" }, c.label);
    }
    if (c.kind === "filter") {
      const f = c.filter;
      return h(doc, "th", {
        class: `nnx-split-filter f-${f.index}`, "data-filter": f.index, "data-col": c.id, scope: "col",
        title: filterTitle(f), "aria-pressed": active === f.index ? "true" : "false", role: "button",
      },
      h(doc, "div", { class: "nm" }, f.name),
      h(doc, "div", { class: "lb" }, f.label),
      h(doc, "div", { class: "ct" }, `${fmtCount(f.count)} \u00B7 ${fmtBytes(f.bytes)}`));
    }
    return h(doc, "th", {
      class: "nnx-split-rest", "data-filter": REST, "data-col": REST, scope: "col", role: "button",
      title: "Variables no filter matched: nnx.split raises for them (add `...` as the last filter to collect them)\nclick: show only these",
      "aria-pressed": active === REST ? "true" : "false",
    },
    h(doc, "div", { class: "nm" }, "remainder"),
    h(doc, "div", { class: "lb" }, "no filter"),
    h(doc, "div", { class: "ct" }, `${fmtCount(prep.rest.count)} \u00B7 ${fmtBytes(prep.rest.bytes)}`));
  }

  function fillTable() {
    cols = columns(prep);
    filterStyle.replaceChildren(filterCss(prep.filters.length));
    colgroup.replaceChildren(...cols.map((c) => h(doc, "col", { class: `k-${c.id}`, style: c.width ? `width:${c.width}px` : null })));
    headRow.replaceChildren(...cols.map(headerCell));
    table.style.minWidth = `${tableWidth(cols)}px`;
    setColspan(spacers, cols.length);
  }

  function markHeaders() {
    for (const th of headRow.children) {
      const key = th.getAttribute("data-filter");
      if (key === null) continue;
      const on = active !== null && String(active) === key;
      th.setAttribute("aria-pressed", on ? "true" : "false");
    }
  }

  function rowEl(r) {
    const rows = prep.rows;
    const path = rows.path[r];
    const kind = rowKind(prep, r);
    const tr = h(doc, "tr", { class: `nnx-split-row${kind ? ` ${kind}` : ""}`, "data-path": path, "data-row": r });
    const aliases = rows.aliases[r];
    let title = path || "(root)";
    if (aliases.length) title += `\nalso reachable as: ${aliases.join(", ")}`;
    const pathTd = h(doc, "td", { class: "c-path", title }, path || "(root)");
    if (aliases.length) pathTd.appendChild(h(doc, "span", { class: "alias" }, `= ${aliases.join(", ")}`));
    const type = rows.type[r];
    const nbytes = rows.nbytes[r];
    tr.append(
      pathTd,
      h(doc, "td", { class: "c-type", title: type },
        h(doc, "span", { class: "chip" },
          h(doc, "span", { class: "nnx-dot", style: `background:${typeColor(type)}` }),
          h(doc, "span", { class: "t" }, type))),
      h(doc, "td", { class: "c-shape num" }, fmtShape(rows.shape[r])),
      h(doc, "td", { class: "c-dtype", title: rows.dtype[r] ?? null }, rows.dtype[r] ?? ""),
      h(doc, "td", { class: "c-bytes num", title: nbytes === null ? null : `${fmtCount(nbytes)} bytes` }, fmtBytes(nbytes)),
    );
    for (const c of cols) {
      if (c.kind === "filter") {
        const f = c.filter;
        const mark = markOf(prep, r, f.index);
        const td = h(doc, "td", { class: `fc f-${f.index}` });
        if (mark === "taken") {
          td.appendChild(h(doc, "span", { class: "nnx-mark taken", title: `taken by ${f.name} (${f.label})` }));
        } else if (mark === "shadowed") {
          const by = prep.filters[rows.taken_by[r]];
          td.appendChild(h(doc, "span", {
            class: "nnx-mark shadowed",
            title: `matched by ${f.label} too, but ${by ? `${by.name} (${by.label})` : "an earlier filter"} took it first`,
          }));
        }
        tr.appendChild(td);
      } else if (c.kind === "rest") {
        const td = h(doc, "td", { class: "c-rest" });
        if (kind === "remainder") td.appendChild(h(doc, "span", { class: "nnx-mark rest", title: "no filter matched this Variable" }));
        tr.appendChild(td);
      }
    }
    return tr;
  }

  // --- window --------------------------------------------------------------------------------

  function viewportHeight() {
    return Math.max(0, (scroller.clientHeight || 420) - (thead.offsetHeight || 48));
  }

  function draw(first, last, total) {
    rendered = drawWindow(spacers, items, rendered, rowEl, first, last, total);
  }

  const windowing = watchWindow(scroller, { viewportHeight, count: () => items.length, draw });
  cleanups.push(() => windowing.destroy());

  function relayout() {
    items = visibleRows(prep, active);
    setText(showing, showingText(prep, active, items.length));
    const msg = prep.n === 0 ? "no Variables" : items.length === 0 ? "no Variable here" : "";
    empty.hidden = !msg;
    setText(empty, msg);
    markHeaders();
    scroller.scrollTop = 0;
    windowing.refresh(true);
  }

  // --- data ----------------------------------------------------------------------------------

  function onReport() {
    prep = prepare(model.get("report") || {});
    if (active !== null && active !== REST && !prep.filters[active]) active = null;
    if (active === REST && prep.rest.count === 0) active = null;
    problemsShown = PROBLEMS_SHOWN;
    rendered = new Map();
    setText(codeText, prep.code);
    codeBox.hidden = !prep.code;
    fillHead();
    fillProblems();
    fillTable();
    relayout();
  }

  // --- events --------------------------------------------------------------------------------

  thead.addEventListener("click", (ev) => {
    const th = ev.target && ev.target.closest ? ev.target.closest("th[data-filter]") : null;
    if (!th) return;
    const key = th.getAttribute("data-filter");
    active = toggleActive(active, key === REST ? REST : Number(key));
    relayout();
  });

  const onChange = () => onReport();
  model.on("change:report", onChange);
  cleanups.push(() => model.off("change:report", onChange));

  onReport();

  return () => {
    for (const c of cleanups) c();
    copy.destroy();
  };
}

export default { render };
