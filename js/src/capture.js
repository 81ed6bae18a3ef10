// @ts-check
// nnx_lab capture panel: an anywidget front end for CapturePanel. Toggles (which Variable types
// to collect, method outputs, a checkbox per submodule: capture/toggles.js) go to Python as
// custom messages; `report` is what the last call captured: one row per value with statistics
// and a histogram, and gradient statistics after panel.grads(...) (capture/rows.js). The
// "report" variant (what %%nnx_capture shows) is the same table without toggles. Uses only
// anywidget's model API (get, on, off, send); every user string (paths, class names, sow keys,
// messages) is put into the page as text.

import { h, setText } from "./shared/dom.js";
import { fmtCount, fmtMs } from "./shared/format.js";
import { defaultExpanded, remapExpanded } from "./shared/tree.js";
import { createWindowedTable, drawWindow, setColspan, watchWindow } from "./shared/table.js";
import { tableFit } from "./shared/tablefit.js";
import { captureCss } from "./capture/styles.js";
import {
  captureColumns,
  PATH_MIN_WIDTH,
  columnsWidth,
  inlineGroups,
  prepareReport,
  visibleColumns,
  visibleItems,
} from "./capture/data.js";
import { moduleRow, valueRow } from "./capture/rows.js";
import { createToggles } from "./capture/toggles.js";

/** The head line (target, calls, values, gradients, loss, time) of status `st` and report `prep`. */
function headParts(doc, st, prep, toggles) {
  const sep = () => h(doc, "span", { class: "sep" }, "\u00B7");
  const parts = [
    h(doc, "span", { class: "root" }, `${toggles ? "capture" : "%%nnx_capture"} \u00B7 ${st.target || "model"}`),
  ];
  const calls = st.calls || 0;
  if (toggles)
    parts.push(
      sep(),
      h(doc, "span", { class: "dim nnx-capture-calls" }, `${fmtCount(calls)} call${calls === 1 ? "" : "s"}`),
    );
  if (prep.called) {
    let n = prep.tree.R;
    for (const x of prep.gradOnly) n -= x;
    parts.push(
      sep(),
      h(doc, "span", { class: "dim nnx-capture-count" }, `${fmtCount(n)} value${n === 1 ? "" : "s"} captured`),
    );
    if (prep.grad) {
      const g = prep.grad.tree.R;
      parts.push(sep(), h(doc, "span", { class: "dim" }, `${fmtCount(g)} gradient${g === 1 ? "" : "s"}`));
    }
  }
  if (st.loss_text)
    // Python's text: a NaN/Inf loss is said too (JSON has no NaN; as a number it would not arrive)
    parts.push(
      sep(),
      h(
        doc,
        "span",
        { class: typeof st.loss === "number" ? "loss" : "loss bad", title: "loss of the last panel.grads call" },
        `loss ${st.loss_text}`,
      ),
    );
  if (typeof st.elapsed_ms === "number") {
    const what = toggles ? "how long the last call took" : "how long the cell body took";
    parts.push(sep(), h(doc, "span", { class: "dim", title: what }, fmtMs(st.elapsed_ms)));
  }
  return parts;
}

/**
 * @typedef {object} CaptureTraits the widget's synced traits (nnx_lab/widgets/capture.py and capture_report.py, typed by traits.py)
 * @property {import("./shared/wire").CaptureControls} controls
 * @property {import("./shared/wire").CaptureStatus} status
 * @property {import("./shared/wire").CaptureReport} report
 * @property {string} busy_note
 * @property {string} variant
 */

/** @param {import("./shared/model").RenderProps<CaptureTraits>} props */
function render({ model, el }) {
  const doc = el.ownerDocument || document;
  const cleanups = [];
  const toggles = model.get("variant") !== "report"; // the panel; a magic's report has none

  let prep = prepareReport(null);
  let cols = [];
  let expanded = new Uint8Array(0);
  let inline = new Uint8Array(0);
  let items = [];
  let rendered = new Map(); // item id -> tr (only the window)

  const root = h(doc, "div", { class: "nnx-lab-capture" });
  const head = h(doc, "div", { class: "nnx-capture-head" });
  const panel = createToggles(doc, model, () => prep.seen);
  const messages = h(doc, "ul", { class: "nnx-capture-messages", "aria-label": "capture messages", hidden: true });
  const status = h(doc, "div", { class: "nnx-capture-status", role: "status" });
  const colgroup = h(doc, "colgroup");
  const headRow = h(doc, "tr");
  const thead = h(doc, "thead", null, headRow);
  const { scroller, table, tbody, empty, spacers } = createWindowedTable(doc, {
    tableClass: "nnx-capture-table",
    colgroup,
    thead,
  });
  const style = h(doc, "style", null, captureCss());
  // the columns for the output's width: the least important fold behind "+N columns" (issue 35)
  const fit = tableFit(doc, {
    root,
    scroller,
    minWidth: PATH_MIN_WIDTH,
    onChange: () => {
      fillColumns();
      relayout();
    },
  });
  cleanups.push(() => fit.destroy());
  const headEnd = h(doc, "span", { class: "nnx-capture-head-end" }, fit.picker);
  if (toggles) root.append(style, head, panel.controls, panel.pending, messages, scroller, status);
  else root.append(style, head, messages, scroller, status);
  el.replaceChildren(root);

  function fillHead() {
    /** @type {Partial<import("./shared/wire").CaptureStatus>} */
    const st = model.get("status") || {};
    head.replaceChildren(...headParts(doc, st, prep, toggles), headEnd);
    status.setAttribute("data-level", st.level || "");
    setText(status, st.message || "");
    status.hidden = !st.message;
  }

  function fillColumns() {
    cols = fit.shown(visibleColumns(prep));
    colgroup.replaceChildren(
      ...cols.map((c) => h(doc, "col", { class: `k-${c.id}`, style: c.width ? `width:${c.width}px` : null })),
    );
    headRow.replaceChildren(
      ...cols.map((c) =>
        h(
          doc,
          "th",
          {
            "data-col": c.id,
            scope: "col",
            title: c.title ? `${c.label}: ${c.title}` : c.label,
            class: [c.num ? "num" : "", c.grad ? "grad" : ""].join(" ").trim() || null,
          },
          c.label,
        ),
      ),
    );
    table.style.minWidth = `${columnsWidth(cols)}px`;
    setColspan(spacers, cols.length);
  }

  const rowFor = (id) =>
    id < prep.tree.N
      ? moduleRow(doc, prep, cols, !!expanded[id], id)
      : valueRow(doc, prep, cols, inline, id - prep.tree.N);
  const windowing = watchWindow(scroller, {
    viewportHeight: () => Math.max(0, (scroller.clientHeight || 420) - (thead.offsetHeight || 22)),
    count: () => items.length,
    draw: (first, last, total) => {
      rendered = drawWindow(spacers, items, rendered, rowFor, first, last, total);
    },
  });
  cleanups.push(() => windowing.destroy());

  function relayout() {
    items = visibleItems(prep.tree, expanded, inline);
    rendered = new Map();
    let msg = "";
    if (!prep.called && toggles) msg = "no call yet: call panel(...) with the model's arguments to run it and capture";
    else if (items.length === 0) msg = "nothing captured";
    empty.hidden = !msg;
    setText(empty, msg);
    windowing.refresh(true);
  }

  tbody.addEventListener("click", (/** @type {import("./shared/dom.js").On} */ ev) => {
    const tr = ev.target && ev.target.closest ? ev.target.closest("tr.nnx-capture-module") : null;
    if (!tr) return;
    const i = Number(tr.getAttribute("data-id"));
    if (!Number.isInteger(i) || i < 0 || i >= expanded.length) return;
    expanded[i] = expanded[i] ? 0 : 1;
    relayout();
  });

  function onReport() {
    const old = prep.tree;
    const oldExpanded = expanded;
    prep = prepareReport(model.get("report"));
    inline = inlineGroups(prep.tree);
    fit.set(captureColumns(prep), new Set(visibleColumns(prep).map((c) => c.id)));
    expanded = old && old.N ? remapExpanded(old, oldExpanded, prep.tree) : defaultExpanded(prep.tree);
    fillColumns();
    messages.replaceChildren(...prep.messages.map((m) => h(doc, "li", null, m)));
    messages.hidden = prep.messages.length === 0;
    fillHead();
    panel.fill(); // "seen" marks come from the report
    relayout();
  }

  const listen = (name, cb) => {
    model.on(name, cb);
    cleanups.push(() => model.off(name, cb));
  };
  listen("change:report", onReport);
  listen("change:controls", panel.fill);
  listen("change:status", fillHead);
  listen("msg:custom", panel.onAck);
  onReport();

  return () => {
    for (const c of cleanups) c();
  };
}

export default { render };
