// nnx_lab capture panel: an anywidget front end for CapturePanel. Toggles (which Variable types
// to collect, method outputs, a checkbox per submodule) go to Python as custom messages, which
// validates them and sends the new `controls` back (naming the last message it applied; until
// then the panel says the toggle is waiting, or queued when the kernel acks it during a busy
// cell); `report` is what the last call captured:
// one row per value with statistics and a histogram, and gradient statistics after
// panel.grads(...). The "report" variant (what %%nnx_capture shows) is the same table without
// toggles. Uses only anywidget's model API (get, on, off, send); every user string
// (paths, class names, sow keys, messages) is put into the page as text.

import { h, s, setText } from "./shared/dom.js";
import { typeColor } from "./shared/colors.js";
import { fmtCount, fmtMs, fmtNonfinite, fmtNum, fmtShape, keyText } from "./shared/format.js";
import { defaultExpanded, remapExpanded } from "./shared/tree.js";
import { createWindowedTable, drawWindow, setColspan, watchWindow } from "./shared/table.js";
import { HIST_H, HIST_W, captureCss } from "./capture/styles.js";
import {
  columnsWidth, histPath, histTitle, inlineGroups, moduleTree, modulesSummary, prepareReport, rowLabel,
  visibleColumns, visibleItems,
} from "./capture/data.js";
import { Requests } from "./shared/requests.js";
import { STAT_COLUMNS } from "./shared/constants.js";

const INDENT = 14;
const WAITING = "toggle sent: waiting for the kernel (a running cell reads it when it ends)";
const QUEUED = "toggle queued: applies at the panel's next call";
const CHANGED = "toggles changed: they apply from the next call";

function tableText(tables, name, idx) {
  const t = tables && tables[name];
  return idx !== null && idx !== undefined && idx >= 0 && t && idx < t.length ? String(t[idx]) : "";
}

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
  const requests = new Requests(); // toggles sent that the kernel has not applied yet

  // --- DOM -----------------------------------------------------------------------------------
  const root = h(doc, "div", { class: "nnx-lab-capture" });
  const style = h(doc, "style", null, captureCss());
  const head = h(doc, "div", { class: "nnx-capture-head" });
  const types = h(doc, "div", { class: "nnx-capture-group nnx-capture-types", role: "group", "aria-label": "Variable types to collect" });
  const methods = h(doc, "div", { class: "nnx-capture-group" });
  const summary = h(doc, "summary");
  const moduleList = h(doc, "div", { class: "nnx-capture-module-list", role: "group", "aria-label": "submodules to capture" });
  const allBtn = h(doc, "button", { type: "button", class: "nnx-capture-all", title: "capture every submodule" }, "all");
  const noneBtn = h(doc, "button", { type: "button", class: "nnx-capture-none", title: "capture no submodule" }, "none");
  const modules = h(doc, "details", { class: "nnx-capture-modules" }, summary,
    h(doc, "div", { class: "nnx-capture-module-tools" }, allBtn, noneBtn), moduleList);
  const controls = h(doc, "div", { class: "nnx-capture-controls" }, types, methods, modules);
  const pending = h(doc, "div", { class: "nnx-capture-pending", role: "status", hidden: true });
  const messages = h(doc, "ul", { class: "nnx-capture-messages", "aria-label": "capture messages", hidden: true });
  const status = h(doc, "div", { class: "nnx-capture-status", role: "status" });
  const colgroup = h(doc, "colgroup");
  const headRow = h(doc, "tr");
  const thead = h(doc, "thead", null, headRow);
  const { scroller, table, tbody, empty, spacers } = createWindowedTable(doc, {
    tableClass: "nnx-capture-table", colgroup, thead });
  if (toggles) root.append(style, head, controls, pending, messages, scroller, status);
  else root.append(style, head, messages, scroller, status);
  el.replaceChildren(root);

  // --- controls ------------------------------------------------------------------------------

  function fillControls() {
    const c = model.get("controls") || {};
    const seen = new Set(prep.seen);
    types.replaceChildren(h(doc, "span", { class: "lbl" }, "collect"),
      ...(Array.isArray(c.types) ? c.types : []).map((t) => {
        const name = String(t.name);
        const input = h(doc, "input", { type: "checkbox", "data-type": name, "aria-label": `collect ${name}` });
        input.checked = !!t.on;
        const title = [t.title || name, t.doc || "", seen.has(name) ? "sown in the last call" : ""].filter(Boolean).join("\n");
        return h(doc, "label", { class: `nnx-capture-toggle${t.on ? " on" : ""}${seen.has(name) ? " seen" : ""}`, title },
          input, h(doc, "span", { class: "nnx-dot", style: `background:${typeColor(name)}` }),
          h(doc, "span", { class: "nm" }, name));
      }));
    const m = h(doc, "input", { type: "checkbox", class: "nnx-capture-methods", "aria-label": "record method outputs" });
    m.checked = !!c.methods;
    methods.replaceChildren(h(doc, "label", {
      class: `nnx-capture-toggle${c.methods ? " on" : ""}`,
      title: "record the output of every method of every chosen submodule (nnx.capture's method_outputs)",
    }, m, h(doc, "span", { class: "nm" }, "method outputs")));

    const list = Array.isArray(c.modules) ? c.modules : [];
    const tree = moduleTree(list);
    summary.replaceChildren("modules ", h(doc, "span", { class: "dim" }, modulesSummary(tree)));
    moduleList.replaceChildren(...list.map((mod, i) => {
      const path = String(mod.path ?? "");
      const input = h(doc, "input", { type: "checkbox", "data-module": path, "aria-label": `capture ${path || "(root)"}` });
      input.checked = !!tree.checked[i];
      input.indeterminate = !!tree.mixed[i];
      const key = tree.parent[i] < 0 ? (path || "(root)") : keyText(mod.key, true);
      return h(doc, "label", {
        class: "nnx-capture-module", style: `padding-left:${tree.depth[i] * INDENT}px`,
        title: `${path || "(root)"}${mod.cls ? ` \u00B7 ${mod.cls}` : ""}${mod.on ? "" : "\n(its own values are not captured)"}`,
      }, input, h(doc, "span", { class: "k" }, key), mod.cls ? h(doc, "span", { class: "cls" }, String(mod.cls)) : null);
    }));
    requests.settle(c.answered);
    fillPending();
  }

  function fillPending() {
    const c = model.get("controls") || {};
    const open = [...requests.open.values()];
    const state = open.some((r) => r.state === "queued") ? "queued" : open.length ? "pending" : c.pending ? "changed" : "";
    pending.hidden = !state;
    pending.setAttribute("data-state", state);
    const waiting = model.get("busy_note") ? `toggle sent: ${model.get("busy_note")}` : WAITING; // no subshells: Colab, VS Code
    setText(pending, state === "queued" ? QUEUED : state === "pending" ? waiting : state ? CHANGED : "");
  }

  function send(msg) {
    model.send(requests.start(msg, "toggle"));
    fillPending();
  }

  function onAck(msg) {
    if (msg && msg.type === "ack" && requests.ack(msg)) fillPending();
  }

  controls.addEventListener("change", (ev) => {
    const t = ev.target;
    if (!t || !t.getAttribute) return;
    const on = !!t.checked;
    const type = t.getAttribute("data-type");
    const mod = t.getAttribute("data-module");
    if (type !== null) send({ type: "type", name: type, on });
    else if (mod !== null) send({ type: "module", path: mod, on });
    else if (t.classList && t.classList.contains("nnx-capture-methods")) send({ type: "methods", on });
  });
  allBtn.addEventListener("click", () => send({ type: "modules", on: true }));
  noneBtn.addEventListener("click", () => send({ type: "modules", on: false }));
  // Keep notebook shortcuts (space, a, b, dd...) from firing while using the controls.
  controls.addEventListener("keydown", (ev) => ev.stopPropagation());

  // --- head and status -------------------------------------------------------------------------

  function fillHead() {
    const st = model.get("status") || {};
    const sep = () => h(doc, "span", { class: "sep" }, "\u00B7");
    const parts = [h(doc, "span", { class: "root" }, `${toggles ? "capture" : "%%nnx_capture"} \u00B7 ${st.target || "model"}`)];
    const calls = st.calls || 0;
    if (toggles) parts.push(sep(), h(doc, "span", { class: "dim nnx-capture-calls" }, `${fmtCount(calls)} call${calls === 1 ? "" : "s"}`));
    if (prep.called) {
      let n = prep.tree.R;
      for (const x of prep.gradOnly) n -= x;
      parts.push(sep(), h(doc, "span", { class: "dim nnx-capture-count" }, `${fmtCount(n)} value${n === 1 ? "" : "s"} captured`));
      if (prep.grad) {
        const g = prep.grad.tree.R;
        parts.push(sep(), h(doc, "span", { class: "dim" }, `${fmtCount(g)} gradient${g === 1 ? "" : "s"}`));
      }
    }
    if (typeof st.loss === "number") parts.push(sep(), h(doc, "span", { class: "loss", title: "loss of the last panel.grads call" }, `loss ${fmtNum(st.loss)}`));
    if (typeof st.elapsed_ms === "number") {
      const what = toggles ? "how long the last call took" : "how long the cell body took";
      parts.push(sep(), h(doc, "span", { class: "dim", title: what }, fmtMs(st.elapsed_ms)));
    }
    head.replaceChildren(...parts);
    const level = st.level || "";
    status.setAttribute("data-level", level);
    setText(status, st.message || "");
    status.hidden = !st.message;
  }

  function fillMessages() {
    messages.replaceChildren(...prep.messages.map((m) => h(doc, "li", null, m)));
    messages.hidden = prep.messages.length === 0;
  }

  // --- table ---------------------------------------------------------------------------------

  function fillColumns() {
    cols = visibleColumns(prep);
    colgroup.replaceChildren(...cols.map((c) => h(doc, "col", { class: `k-${c.id}`, style: c.width ? `width:${c.width}px` : null })));
    headRow.replaceChildren(...cols.map((c) => h(doc, "th", {
      "data-col": c.id, scope: "col", title: c.title || null,
      class: [c.num ? "num" : "", c.grad ? "grad" : ""].join(" ").trim() || null,
    }, c.label)));
    table.style.minWidth = `${columnsWidth(cols)}px`;
    setColspan(spacers, cols.length);
  }

  function histCell(cls, hist, label) {
    const td = h(doc, "td", { class: cls });
    if (!hist) return td;
    const d = histPath(hist.counts, HIST_W, HIST_H);
    const title = histTitle(hist, label);
    td.setAttribute("title", title);
    td.appendChild(s(doc, "svg", {
      class: "nnx-capture-hist", width: HIST_W, height: HIST_H, viewBox: `0 0 ${HIST_W} ${HIST_H}`,
      role: "img", "aria-label": title.split("\n")[0],
    }, s(doc, "line", { x1: 0, y1: HIST_H + 0.5, x2: HIST_W, y2: HIST_H + 0.5 }), d ? s(doc, "path", { d }) : null));
    return td;
  }

  /** Cells of one value: `t` the tree (forward or gradient) it is a row of, `r` its row. */
  function statCells(t, r, grad) {
    const snap = t.snap || {};
    const stats = snap.stats || {};
    const rows = snap.rows || {};
    const st = (c) => (stats[c] ? stats[c][r] : null);
    const state = tableText(snap.tables, "status", rows.status ? rows.status[r] : null);
    const nf = fmtNonfinite(st("nan_count"), st("inf_count"));
    const cell = (id, v) => h(doc, "td", { class: `c-${id} num${grad ? " grad" : ""}` }, fmtNum(v));
    const out = {};
    for (const c of STAT_COLUMNS) out[c] = cell(grad ? `g${c}` : c, st(c));
    if (state && state !== "ok") {
      const note = rows.note ? rows.note[r] : null;
      out.mean = h(doc, "td", { class: `c-${grad ? "g" : ""}mean${grad ? " grad" : ""}`, title: note ? `${state}: ${note}` : state },
        h(doc, "span", { class: "st" }, state));
    }
    out.nonfinite = h(doc, "td", { class: `c-${grad ? "g" : ""}nonfinite num${grad ? " grad" : ""}${nf ? " bad" : ""}` }, nf);
    return out;
  }

  function gradCells(k) {
    const g = prep.grad;
    if (k < 0) {
      const blank = (id) => h(doc, "td", { class: `c-${id} grad`, title: "no gradient: this value was not perturbed" });
      return { gmean: blank("gmean"), gstd: blank("gstd"), gnorm: blank("gnorm"), gnonfinite: blank("gnonfinite"), ghist: blank("ghist") };
    }
    const c = statCells(g.tree, k, true);
    return { gmean: c.mean, gstd: c.std, gnorm: c.norm, gnonfinite: c.nonfinite,
             ghist: histCell("c-ghist grad", g.hist[k], "gradient values") };
  }

  function typeCell(type) {
    return h(doc, "td", { class: "c-type", title: type },
      h(doc, "span", { class: "chip" },
        h(doc, "span", { class: "nnx-dot", style: `background:${typeColor(type)}` }),
        h(doc, "span", { class: "t" }, type)));
  }

  function describeCells(t, r) {
    const snap = t.snap || {};
    const rows = snap.rows || {};
    const dtype = tableText(snap.tables, "dtype", rows.dtype ? rows.dtype[r] : null);
    return {
      type: typeCell(t.rowType[r]),
      shape: h(doc, "td", { class: "c-shape num", title: dtype || null }, fmtShape(rows.shape ? rows.shape[r] : null)),
      dtype: h(doc, "td", { class: "c-dtype" }, dtype),
    };
  }

  function valueRow(r) {
    const t = prep.tree;
    const path = t.rowPath[r];
    const rows = t.snap.rows || {};
    const gradOnly = !!prep.gradOnly[r];
    const meta = tableText(t.snap.tables, "metadata", rows.metadata ? rows.metadata[r] : null);
    const { label, depth } = rowLabel(t, r, inline);
    let title = meta ? `${path}\nmetadata: ${meta}` : path;
    if (gradOnly) title += "\na perturbation: its gradient (the forward value is not captured)";
    const cells = {
      path: h(doc, "td", { class: "c-path", title, style: `padding-left:${6 + depth * INDENT + 14}px` }, label),
      ...describeCells(t, r),
      ...(gradOnly ? {} : statCells(t, r, false)),
      hist: histCell("c-hist", prep.hist[r], "values"),
      ...(prep.grad ? gradCells(prep.grad.row[r]) : {}),
    };
    const tr = h(doc, "tr", { class: `nnx-capture-row${gradOnly ? " grad-only" : ""}`, "data-path": path });
    for (const c of cols) tr.appendChild(cells[c.id] || h(doc, "td", { class: `c-${c.id}${c.grad ? " grad" : ""}` }));
    return tr;
  }

  function moduleRow(i) {
    const t = prep.tree;
    const open = !!expanded[i];
    const tr = h(doc, "tr", { class: "nnx-capture-module", "data-path": t.nodePath[i], "data-id": i, "aria-expanded": open ? "true" : "false" });
    const path = h(doc, "td", { class: "c-path", title: t.nodePath[i], style: `padding-left:${6 + t.nodeDepth[i] * INDENT}px` },
      h(doc, "span", { class: "tog" }, open ? "\u25BE" : "\u25B8"), keyText(t.nodeKey[i], true));
    if (t.nodeType[i]) path.appendChild(h(doc, "span", { class: "cls" }, t.nodeType[i]));
    const n = t.nodeCount[i];
    tr.appendChild(path);
    for (const c of cols.slice(1)) {
      if (c.id === "shape") tr.appendChild(h(doc, "td", { class: "c-shape num" }, `${fmtCount(n)} value${n === 1 ? "" : "s"}`));
      else tr.appendChild(h(doc, "td", { class: `c-${c.id}${c.grad ? " grad" : ""}` }));
    }
    return tr;
  }

  function rowFor(id) {
    return id < prep.tree.N ? moduleRow(id) : valueRow(id - prep.tree.N);
  }

  function viewportHeight() {
    return Math.max(0, (scroller.clientHeight || 420) - (thead.offsetHeight || 22));
  }

  function draw(first, last, total) {
    rendered = drawWindow(spacers, items, rendered, rowFor, first, last, total);
  }

  const windowing = watchWindow(scroller, { viewportHeight, count: () => items.length, draw });
  cleanups.push(() => windowing.destroy());

  function relayout() {
    const t = prep.tree;
    items = visibleItems(t, expanded, inline);
    rendered = new Map();
    let msg = "";
    if (!prep.called && toggles) msg = "no call yet: call panel(...) with the model's arguments to run it and capture";
    else if (items.length === 0) msg = "nothing captured";
    empty.hidden = !msg;
    setText(empty, msg);
    windowing.refresh(true);
  }

  tbody.addEventListener("click", (ev) => {
    const tr = ev.target && ev.target.closest ? ev.target.closest("tr.nnx-capture-module") : null;
    if (!tr) return;
    const i = Number(tr.getAttribute("data-id"));
    if (!Number.isInteger(i) || i < 0 || i >= expanded.length) return;
    expanded[i] = expanded[i] ? 0 : 1;
    relayout();
  });

  // --- data ----------------------------------------------------------------------------------

  function onReport() {
    const old = prep.tree;
    const oldExpanded = expanded;
    prep = prepareReport(model.get("report"));
    inline = inlineGroups(prep.tree);
    expanded = old && old.N ? remapExpanded(old, oldExpanded, prep.tree) : defaultExpanded(prep.tree);
    fillColumns();
    fillMessages();
    fillHead();
    fillControls(); // "seen" marks come from the report
    relayout();
  }

  const listen = (name, cb) => {
    model.on(name, cb);
    cleanups.push(() => model.off(name, cb));
  };
  listen("change:report", onReport);
  listen("change:controls", fillControls);
  listen("change:status", fillHead);
  listen("msg:custom", onAck);

  onReport();

  return () => {
    for (const c of cleanups) c();
  };
}

export default { render };
