// nnx_lab model viewer: an anywidget front end. Uses only anywidget's model API (get, set,
// save_changes, on/off, send), so it runs in JupyterLab, Notebook 7, VS Code and Colab.

import { h } from "./shared/dom.js";
import { css } from "./shared/styles.js";
import { STAT_CHOICES, hiddenColumns, nextSort } from "./shared/columns.js";
import { History } from "./shared/ring.js";
import {
  buildTree, defaultExpanded, remapExpanded, filterRows, flatten, sortKids, ancestors,
} from "./shared/tree.js";
import { createTreeTable } from "./shared/table.js";
import { fillBanner, fillChips, fillDevices, fillStatus, fillTitle } from "./viewer/panels.js";
import { STAT_LABELS } from "./shared/constants.js";

// User actions redraw at once (tests and people see the result right after the click);
// snapshot updates wait for the next frame, so that bursts of them coalesce.
const NOW = { sync: true };

function render({ model, el }) {
  const t0 = performance.now();
  const doc = el.ownerDocument || document;

  // --- state ---------------------------------------------------------------------------------
  let snap = {};
  let tree = null;
  let expanded = new Uint8Array(0); // normal mode
  let filterExpanded = null; // while filtering: all open unless the user closes one
  let query = "";
  let typeFilter = null;
  let sort = null;
  let kids = null; // sorted children (cached per tree+sort)
  let match = null;
  let items = [];
  let stat = model.get("sparkline_stat") || "norm";
  const history = new History(stat);
  let firstPaintDone = false;
  const cleanups = [];

  // --- DOM -----------------------------------------------------------------------------------
  const root = h(doc, "div", { class: "nnx-lab-viewer" });
  const style = h(doc, "style", null, css());
  const title = h(doc, "div", { class: "nnx-title" });
  const devices = h(doc, "div", { class: "nnx-devices" });
  const banner = h(doc, "div", { class: "nnx-banner", role: "alert", hidden: true });
  const chips = h(doc, "div", { class: "nnx-chips" });
  const filter = h(doc, "input", {
    class: "nnx-filter", type: "search", placeholder: "filter paths\u2026", spellcheck: "false",
    "aria-label": "filter variables by path",
  });
  const matches = h(doc, "span", { class: "nnx-matches" });
  const statSelect = h(doc, "select", { class: "nnx-tool nnx-stat", title: "statistic shown in the history sparklines", "aria-label": "sparkline statistic" },
    ...STAT_CHOICES.map((c) => h(doc, "option", { value: c }, STAT_LABELS[c] ?? c)));
  const expandAll = h(doc, "button", { class: "nnx-tool nnx-expand-all", type: "button", title: "expand all modules" }, "expand all");
  const collapseAll = h(doc, "button", { class: "nnx-tool nnx-collapse-all", type: "button", title: "collapse all modules" }, "collapse all");
  const statusState = h(doc, "span", { class: "state" });
  const statusMsg = h(doc, "span", { class: "msg" });
  const statusInfo = h(doc, "span", { class: "info" });
  const refreshBtn = h(doc, "button", { class: "nnx-tool nnx-refresh", type: "button" }, "refresh now");
  const statusLine = h(doc, "div", { class: "nnx-status", role: "status" }, statusState, statusMsg, statusInfo, refreshBtn);

  const table = createTreeTable(doc, {
    onToggle: toggle,
    onSort(column) {
      sort = nextSort(sort, column);
      kids = null;
      relayout(NOW);
    },
    onDrawn() {
      if (firstPaintDone) return;
      firstPaintDone = true;
      requestAnimationFrame(() => {
        // After this frame's paint: a message posted now runs once the frame is done.
        const done = () => {
          el.dataset.firstPaintMs = (performance.now() - t0).toFixed(1);
        };
        if (typeof MessageChannel !== "undefined") {
          const ch = new MessageChannel();
          ch.port1.onmessage = () => {
            ch.port1.close();
            done();
          };
          ch.port2.postMessage(0);
        } else setTimeout(done, 0);
      });
    },
  });

  root.append(
    style,
    h(doc, "div", { class: "nnx-head" }, title, devices),
    banner,
    h(doc, "div", { class: "nnx-bar-row" }, filter, matches, chips,
      h(doc, "div", { class: "nnx-tools" },
        h(doc, "label", { class: "nnx-muted" }, "trend ", statSelect),
        expandAll, collapseAll)),
    table.el,
    statusLine,
  );
  el.replaceChildren(root);

  // --- derived state -------------------------------------------------------------------------

  function currentExpanded() {
    return match ? filterExpanded : expanded;
  }

  function relayout(opts = {}) {
    if (!tree) {
      items = [];
      table.update({ tree: null, items, sort, history, stat, emptyText: snap.version === undefined ? "waiting for the first snapshot\u2026" : "" }, opts);
      matches.replaceChildren();
      return;
    }
    if (!kids) kids = sortKids(tree, sort && sort.column, sort && sort.dir);
    items = flatten(tree, currentExpanded(), kids, match);
    let emptyText = "";
    if (tree.R === 0 && tree.N === 0) emptyText = "no Variables";
    else if (match && items.length === 0) emptyText = "no Variable matches the filter";
    if (match) {
      let n = 0;
      for (let r = 0; r < tree.R; r++) n += match[r];
      matches.replaceChildren(`${n} of ${tree.R}`);
    } else matches.replaceChildren();
    table.update({ tree, items, sort, history, stat, expanded: currentExpanded(), emptyText,
                   hidden: hiddenColumns(snap) }, opts);
  }

  function refilter() {
    const had = !!match;
    match = tree ? filterRows(tree, query, typeFilter) : null;
    if (match && (!had || !filterExpanded || filterExpanded.length !== tree.N)) {
      filterExpanded = new Uint8Array(tree.N).fill(1);
    }
    if (!match) filterExpanded = null;
  }

  function toggle(i) {
    const e = currentExpanded();
    if (!e || i >= e.length) return;
    e[i] = e[i] ? 0 : 1;
    relayout(NOW);
  }

  function setAll(v) {
    if (!tree) return;
    currentExpanded().fill(v);
    relayout(NOW);
  }

  function reveal(r) {
    if (!tree || r < 0 || r >= tree.R) return;
    const id = tree.N + r;
    if (match && !match[r]) {
      query = "";
      typeFilter = null;
      filter.value = "";
      refilter();
      drawChips();
    }
    const e = currentExpanded();
    for (const p of ancestors(tree, id)) e[p] = 1;
    relayout(NOW);
    const index = items.indexOf(id);
    if (index >= 0) table.reveal(index);
  }

  function onSnapshot(initial = false) {
    const next = model.get("snapshot") || {};
    snap = next;
    if (snap.version === undefined) {
      tree = null;
    } else {
      const old = tree;
      const oldExpanded = expanded;
      tree = buildTree(snap, old);
      if (!old || old.shape !== tree.shape) {
        expanded = old ? remapExpanded(old, oldExpanded, tree) : defaultExpanded(tree);
        filterExpanded = null;
        match = null;
      }
      kids = null;
      refilter();
    }
    if (history.onSnapshot(snap) && initial !== true) model.send({ type: "history", stat });
    // Rebuild the small pieces only when they change (a click must not lose its target).
    once("title", [snap.root_type, snap.totals && snap.totals.all], () => fillTitle(doc, title, snap));
    once("devices", snap.devices, () => fillDevices(doc, devices, snap.devices));
    drawChips();
    fillBanner(doc, banner, snap, tree);
    relayout();
  }

  const drawn = {};
  function once(key, data, fill) {
    const sig = JSON.stringify(data ?? null);
    if (drawn[key] === sig) return;
    drawn[key] = sig;
    fill();
  }

  function drawChips() {
    once("chips", [snap.totals, typeFilter], () => fillChips(doc, chips, snap, typeFilter));
  }

  function onStatus() {
    fillStatus(doc, statusLine, { state: statusState, msg: statusMsg, info: statusInfo, button: refreshBtn }, model.get("status"));
  }

  const statOptions = new Set(STAT_CHOICES);
  function showStat(value) {
    if (!statOptions.has(value)) {
      // A statistic set from Python that the menu does not list (e.g. zero_frac).
      statOptions.add(value);
      statSelect.appendChild(h(doc, "option", { value }, value));
    }
    statSelect.value = value;
  }

  function onStat() {
    const next = model.get("sparkline_stat") || "norm";
    showStat(next);
    if (next === stat) return;
    stat = next;
    history.setStat(stat);
    model.send({ type: "history", stat });
    relayout();
  }

  function onMsg(msg, buffers) {
    if (!msg || msg.type !== "history") return;
    if (history.onHistory(msg, buffers && buffers[0])) relayout();
  }

  // --- events --------------------------------------------------------------------------------
  filter.addEventListener("input", () => {
    if (filter.value === query) return;
    query = filter.value;
    filterExpanded = null;
    refilter();
    relayout(NOW);
  });
  // Keep notebook shortcuts (a, b, dd, arrows...) from firing while typing.
  for (const t of [filter, statSelect]) t.addEventListener("keydown", (ev) => ev.stopPropagation());
  chips.addEventListener("click", (ev) => {
    const chip = ev.target.closest ? ev.target.closest(".nnx-type-chip") : null;
    if (!chip) return;
    const name = chip.getAttribute("data-type");
    typeFilter = typeFilter === name ? null : name;
    filterExpanded = null;
    refilter();
    drawChips();
    relayout(NOW);
  });
  banner.addEventListener("click", () => {
    const r = Number(banner.getAttribute("data-row"));
    if (Number.isInteger(r)) reveal(r);
  });
  statSelect.addEventListener("change", () => {
    model.set("sparkline_stat", statSelect.value);
    model.save_changes();
    onStat(); // in case the front end does not echo the change back
  });
  refreshBtn.addEventListener("click", () => model.send({ type: "refresh" }));
  expandAll.addEventListener("click", () => setAll(1));
  collapseAll.addEventListener("click", () => setAll(0));

  const listen = (name, cb) => {
    model.on(name, cb);
    cleanups.push(() => model.off(name, cb));
  };
  listen("change:snapshot", onSnapshot);
  listen("change:status", onStatus);
  listen("change:sparkline_stat", onStat);
  listen("msg:custom", onMsg);

  // --- first render --------------------------------------------------------------------------
  showStat(stat);
  onStatus();
  onSnapshot(true);
  model.send({ type: "history", stat });
  // Draw the first window now (not on the next frame) so the first paint has rows.
  relayout(NOW);

  return () => {
    for (const c of cleanups) c();
    table.destroy();
  };
}

export default { render };
