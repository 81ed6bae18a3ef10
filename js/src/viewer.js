// @ts-check
// nnx_lab model viewer: an anywidget front end. Uses only anywidget's model API (get, set,
// save_changes, on/off, send), so it runs in JupyterLab, Notebook 7, VS Code and Colab.
// Composed of viewer/panels.js (title, devices, NaN/Inf banner, chips), viewer/scalars.js (the
// header's curves of logged scalars), viewer/toolbar.js (filter, statistic, expand/collapse,
// status line), viewer/rows.js (which rows are listed), viewer/connection.js (whether the kernel
// side is still there: a restart is said, not a green "live") and shared/table.js (the virtualized
// tree table with sparklines).

import { h } from "./shared/dom.js";
import { css } from "./shared/styles.js";
import { hiddenColumns, quietStatus } from "./shared/columns.js";
import { History, toFloat32, withStats } from "./shared/ring.js";
import { createTreeTable } from "./shared/table.js";
import { createHeatmap } from "./viewer/heatmap.js";
import { fillBanner, fillChips, fillDevices, fillTitle } from "./viewer/panels.js";
import { RowState } from "./viewer/rows.js";
import { createSeriesBar, displayed, readSeries } from "./viewer/series.js";
import { fillScalars, parseScalars } from "./viewer/scalars.js";
import { createStatusLine, createToolbar, firstPaintMarker } from "./viewer/toolbar.js";
import { createBaselineBar, withSince } from "./viewer/baseline.js";
import { createAnswerWait, LOST, watchConnection } from "./viewer/connection.js";
import { MSG } from "./shared/constants.js";

// User actions redraw at once (tests and people see the result right after the click);
// snapshot updates wait for the next frame, so that bursts of them coalesce.
const NOW = { sync: true };

/**
 * @typedef {object} ViewerTraits the viewer's synced traits (nnx_lab/widgets/viewer.py, typed by traits.py)
 * @property {import("./shared/wire").ViewerSnapshot} snapshot
 * @property {import("./shared/wire").ViewerStatus} status
 * @property {Partial<import("./shared/wire").Alert>} alert {} when none
 * @property {string} sparkline_stat
 */

/** @param {import("./shared/model").RenderProps<ViewerTraits>} props */
function render({ model, el }) {
  const t0 = performance.now();
  const doc = el.ownerDocument || document;
  const cleanups = [];
  let snap = {}; // what the table shows (a series' statistics when the switch says so)
  let raw = {}; // the payload as it came
  let items = [];
  let stat = model.get("sparkline_stat") || "norm";
  const history = new History(stat);
  const rows = new RowState();

  const title = h(doc, "div", { class: "nnx-title" });
  const devices = h(doc, "div", { class: "nnx-devices" });
  const banner = h(doc, "div", { class: "nnx-banner", role: "alert", hidden: true });
  const scalars = h(doc, "div", { class: "nnx-scalars", hidden: true });
  const toolbar = createToolbar(doc, {
    onQuery: (text) => rows.setQuery(text) && relayout(NOW),
    onChip(name) {
      rows.toggleType(name);
      drawChips();
      relayout(NOW);
    },
    onStat(value) {
      model.set("sparkline_stat", value);
      model.save_changes();
      onStat(); // in case the front end does not echo the change back
    },
    onExpand: (v) => rows.setAll(v) && relayout(NOW),
  });
  let group = ""; // whose statistics the table shows: the parameters ("") or a series (grad, mu, ...)
  const seriesBar = createSeriesBar(doc, {
    onGroup(name) {
      group = name;
      show(raw);
    },
  });
  const answers = createAnswerWait(drawStatus); // "refresh now" answered, or "no answer" said
  let requests = 0;
  const statusLine = createStatusLine(doc, () => {
    const id = `refresh-${++requests}`;
    answers.sent(id);
    model.send({ type: MSG.REFRESH, id });
  });
  let since = null; // the latest "since" message: each row's change since the pinned baseline
  const baseline = createBaselineBar(doc, { onPin: (req) => model.send({ type: MSG.COMPARE_TO, ...req }) });
  const table = createTreeTable(doc, {
    onToggle: (i) => rows.toggle(i) && relayout(NOW),
    onSort(column) {
      rows.sortBy(column);
      relayout(NOW);
    },
    onDrawn: firstPaintMarker(el, t0),
    onHeatmap(r) {
      heatmap.open(rows.tree, r);
      heatmap.draw({ tree: rows.tree, history, stat });
    },
  });
  const heatmap = createHeatmap(doc);
  toolbar.tools.append(table.picker.el); // "+N columns": what the output's width left out
  const root = h(doc, "div", { class: "nnx-lab-viewer" });
  root.append(
    h(doc, "style", null, css()),
    h(doc, "div", { class: "nnx-head" }, title, devices),
    scalars,
    banner,
    toolbar.el,
    baseline.el,
    seriesBar.el,
    heatmap.el,
    table.el,
    statusLine.el,
  );
  el.replaceChildren(root);
  const connection = watchConnection(model, el, drawStatus); // the kernel restarted: said, buttons stop
  cleanups.push(connection.stop, answers.stop);

  function relayout(opts = {}) {
    const { sort } = rows;
    if (!rows.tree) {
      items = [];
      const emptyText = snap.version === undefined ? "waiting for the first snapshot\u2026" : "";
      table.update({ tree: null, items, sort, history, stat, emptyText }, opts);
      toolbar.setMatches("");
      return;
    }
    const layout = rows.layout();
    items = layout.items;
    toolbar.setMatches(layout.matches);
    table.update(
      {
        tree: rows.tree,
        items,
        sort,
        history,
        stat,
        expanded: rows.expanded,
        emptyText: layout.emptyText,
        hidden: hiddenColumns(snap),
        quietStatus: quietStatus(snap),
        openRows: rows.openRows,
      },
      opts,
    );
    heatmap.draw({ tree: rows.tree, history, stat });
  }

  const drawn = {};
  function once(key, data, fill) {
    const sig = JSON.stringify(data ?? null);
    if (drawn[key] === sig) return;
    drawn[key] = sig;
    fill();
  }
  const drawChips = () =>
    once("chips", [snap.totals, rows.typeFilter], () => fillChips(doc, toolbar.chips, snap, rows.typeFilter));

  const rowCount = (p) => (p.rows && p.rows.parent ? p.rows.parent.length : 0);

  function onSnapshot(initial = false) {
    /** @type {Partial<import("./shared/wire").ViewerSnapshot>} */
    const next = model.get("snapshot") || {};
    const meta = next.series;
    show({ ...next, seriesData: meta ? readSeries(meta, meta.values, rowCount(next)) : null }, initial);
  }

  // A snapshot (from the trait) or the trait's rows with a newer refresh's statistics (a "stats" message).
  function show(next, initial = false) {
    raw = next;
    snap = withSince(displayed(next, group), since);
    baseline.setCopyCost(snap.totals && snap.totals.all ? snap.totals.all.bytes : 0);
    baseline.el.hidden = snap.root_type === "Checkpoint"; // watch(path): a static table, nothing trains
    rows.setSnapshot(snap);
    if (history.onSnapshot(raw) && initial !== true) model.send({ type: MSG.HISTORY, stat });
    seriesBar.fill(raw, group);
    // Rebuild the small pieces only when they change (a click must not lose its target).
    once("title", [snap.root_type, snap.totals && snap.totals.all], () => fillTitle(doc, title, snap));
    once("devices", snap.devices, () => fillDevices(doc, devices, snap.devices));
    drawChips();
    drawBanner();
    relayout();
  }

  const drawBanner = () => fillBanner(doc, banner, snap, rows.tree, model.get("alert"));

  function onStat() {
    const next = model.get("sparkline_stat") || "norm";
    toolbar.showStat(next);
    if (next === stat) return;
    stat = next;
    history.setStat(stat);
    model.send({ type: MSG.HISTORY, stat });
    relayout();
  }

  // The status as Python last said it, unless the front end knows better: the kernel restarted (its
  // widgets are gone: the buttons that ask it stop), or a "refresh now" got no answer.
  function drawStatus() {
    const lost = connection.lost() || (answers.silent() ? LOST.silent : null);
    const st = model.get("status") || {};
    statusLine.fill(lost ? { ...st, state: lost.state, message: lost.message } : st);
    baseline.setEnabled(!(lost && lost.stop));
  }

  /**
   * @param {import("./shared/wire").ToBrowser} msg
   * @param {DataView[]} buffers
   */
  function onMsg(msg, buffers) {
    if (msg) answers.answered(msg.type === MSG.ACK ? msg.id : undefined); // the kernel is there
    if (msg && (msg.type === MSG.SINCE || (msg.type === MSG.ACK && msg.message !== undefined))) {
      if (msg.type === MSG.SINCE) since = msg.values ? msg : null;
      baseline.show(msg);
      if (msg.type === MSG.SINCE) show(raw);
      return;
    }
    if (msg && msg.type === MSG.SCALARS) {
      const curves = parseScalars(msg, buffers);
      if (curves) fillScalars(doc, scalars, curves);
      return;
    }
    if (msg && msg.type === MSG.STATS) {
      const next = withStats(model.get("snapshot") || {}, msg, buffers && buffers[0]);
      if (next && !(next.refresh <= snap.refresh)) {
        next.seriesData = msg.series ? readSeries(msg.series, toFloat32(buffers && buffers[1]), rowCount(next)) : null;
        show(next);
      }
      return;
    }
    if (!msg || msg.type !== MSG.HISTORY) return;
    if (history.onHistory(msg, buffers && buffers[0])) relayout();
  }

  banner.addEventListener("click", (/** @type {import("./shared/dom.js").On} */ ev) => {
    if (ev.target && ev.target.closest && ev.target.closest(".nnx-banner-clear")) {
      if (!connection.lost()) model.send({ type: MSG.CLEAR_ALERT });
      return;
    }
    if (banner.getAttribute("data-row") === null) return; // a scalar's alert: no row to show
    const id = rows.reveal(Number(banner.getAttribute("data-row")));
    if (id === null) return;
    toolbar.filter.value = rows.query;
    drawChips();
    relayout(NOW);
    const index = items.indexOf(id);
    if (index >= 0) table.reveal(index);
  });

  const listen = (name, cb) => {
    model.on(name, cb);
    cleanups.push(() => model.off(name, cb));
  };
  listen("change:snapshot", onSnapshot);
  listen("change:status", () => {
    answers.answered(); // news from the kernel: it is there
    drawStatus();
  });
  listen("change:sparkline_stat", onStat);
  listen("change:alert", drawBanner);
  listen("msg:custom", onMsg);

  // --- first render --------------------------------------------------------------------------
  toolbar.showStat(stat);
  connection.check(); // a view drawn after the kernel restarted (its element is marked already)
  drawStatus();
  onSnapshot(true);
  model.send({ type: MSG.STATS }); // the trait holds the statistics of its last structure change
  model.send({ type: MSG.HISTORY, stat });
  model.send({ type: MSG.SCALARS }); // buffers are not in the initial state on Colab: asked for after display
  // Draw the first window now (not on the next frame) so the first paint has rows.
  relayout(NOW);

  return () => {
    for (const c of cleanups) c();
    table.destroy();
  };
}

export default { render };
