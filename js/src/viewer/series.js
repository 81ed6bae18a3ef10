// @ts-check
// Series beside the rows (nnx_lab.core.training._series): gradients and optimizer state matched
// to the Variables by path. Their numbers arrive as float32[series, stats + ratio, rows] (a second
// buffer of the "stats" message, or `values` in the snapshot trait); this module reads them, adds
// the ‖grad‖ and ‖g‖/‖θ‖ columns to what the table shows, swaps the statistic columns for one
// series' statistics when the "statistics of" switch says so, and draws the series line (optimizer
// step, stale gradients, leaves matched to no Variable, problems). Text only, never HTML.

import { h } from "../shared/dom.js";
import { fmtNum } from "../shared/format.js";

// A step as the series line writes it (1,000); anything else as text.
const fmtStep = (step) => (Number.isInteger(step) ? step.toLocaleString("en-US") : String(step));

export const GRAD = "grad";
export const UPDATE = "update";
export const PARAMS = ""; // the switch's value for the parameters' own statistics

/** The series of a payload: {names, stats: {name: {stat: column}}, ratio: {name: column}, ...}, or null. */
export function readSeries(meta, values, R) {
  if (!meta || !Array.isArray(meta.names) || !Array.isArray(meta.stats) || !values) return null;
  const S = meta.stats.length + 1;
  if (values.length < meta.names.length * S * R) return null;
  const col = (k, j) => {
    const out = new Array(R);
    const base = (k * S + j) * R;
    for (let r = 0; r < R; r++) {
      const v = values[base + r];
      out[r] = v === null || v === undefined || Number.isNaN(v) ? null : v;
    }
    return out;
  };
  const stats = {};
  const ratio = {};
  meta.names.forEach((name, k) => {
    stats[name] = {};
    meta.stats.forEach((stat, j) => {
      stats[name][stat] = col(k, j);
    });
    ratio[name] = col(k, meta.stats.length);
  });
  // The few numbers float32 cannot carry (a gradient's norm beyond its range), exact from Python.
  for (const e of Array.isArray(meta.exact) ? meta.exact : []) {
    const [k, j, r, v] = e;
    const name = meta.names[k];
    if (name === undefined || !(r >= 0 && r < R)) continue;
    if (j === meta.stats.length) ratio[name][r] = v;
    else if (j >= 0 && j < meta.stats.length) stats[name][meta.stats[j]][r] = v;
  }
  return {
    names: meta.names,
    stats,
    ratio,
    steps: meta.steps || {},
    stale: new Set(meta.stale || []),
    since: meta.since || {}, // stale name -> what came after its step (Python says; "none since" by default)
    optStep: meta.opt_step ?? null,
    unmatched: meta.unmatched || [],
    unmatchedTotal: meta.unmatched_total || 0,
    problems: meta.problems || [],
  };
}

/**
 * What the table shows for `snap` (its `series` read by readSeries): the gradient columns added to
 * its statistics, and with `group` naming a series, that series' statistics in place of the
 * parameters' own.
 */
export function displayed(snap, group) {
  const series = snap && snap.seriesData;
  if (!series) return snap;
  const base = group && series.stats[group] ? series.stats[group] : snap.stats || {};
  const stats = { ...base };
  if (series.stats[GRAD]) {
    stats.g_norm = series.stats[GRAD].norm;
    stats.g_ratio = series.ratio[GRAD];
  }
  if (series.ratio[UPDATE]) stats.u_ratio = series.ratio[UPDATE];
  return { ...snap, stats };
}

/** The "statistics of" switch and the series line; `onGroup(name)` on a choice (PARAMS: the parameters). */
export function createSeriesBar(doc, { onGroup }) {
  const select = h(doc, "select", {
    class: "nnx-tool nnx-group",
    "aria-label": "statistics of",
    title: "show the statistics of the parameters or of one series (gradient, optimizer state)",
  });
  const label = h(doc, "label", { class: "nnx-muted" }, "statistics of ", select);
  const line = h(doc, "span", { class: "nnx-series-line" });
  const details = h(doc, "details", { class: "nnx-unmatched", hidden: true });
  const el = h(doc, "div", { class: "nnx-series", hidden: true }, label, line, details);
  select.addEventListener("change", () => onGroup(select.value));
  select.addEventListener("keydown", (ev) => ev.stopPropagation());
  let names = "";
  return {
    el,
    /** Draw the series of `snap` (none: hidden); `group` is the switch's choice. */
    fill(snap, group) {
      const series = snap && snap.seriesData;
      el.hidden = !series;
      if (!series) return;
      const sig = series.names.join("\u0000");
      if (sig !== names) {
        names = sig;
        select.replaceChildren(
          h(doc, "option", { value: PARAMS }, "parameters"),
          ...series.names.map((n) => h(doc, "option", { value: n }, n)),
        );
      }
      select.value = group && series.stats[group] ? group : PARAMS;
      label.hidden = series.names.length === 0;
      const parts = [];
      if (series.optStep !== null) parts.push(`optimizer step ${series.optStep.toLocaleString("en-US")}`);
      for (const n of series.names) {
        if (series.stale.has(n)) parts.push(staleText(series, n));
      }
      parts.push(...series.problems);
      line.replaceChildren(parts.join(" \u00b7 "));
      fillUnmatched(doc, details, series);
    },
  };
}

/** "update from step 947 (computed at the step after a refresh only, every 50 steps)": a series kept
 * from an earlier refresh, and what came after it, as Python wrote it. */
export function staleText(series, name) {
  return `${name} from step ${fmtStep(series.steps[name])} (${series.since[name] || "none since"})`;
}

function fillUnmatched(doc, el, series) {
  const list = series.unmatched;
  el.hidden = list.length === 0;
  if (!list.length) return;
  const total = series.unmatchedTotal;
  const more = total > list.length ? ` (first ${list.length})` : "";
  el.replaceChildren(
    h(doc, "summary", null, `${total} lea${total === 1 ? "f" : "ves"} matched to no Variable${more}`),
    h(
      doc,
      "ul",
      null,
      ...list.map((u) => {
        const nums = Object.entries(u.stats || {})
          .map(([k, v]) => `${k} ${fmtNum(v)}`)
          .join(", ");
        return h(
          doc,
          "li",
          null,
          `${u.series}: `,
          h(doc, "code", null, u.path),
          u.what ? ` \u2014 ${u.what}` : "",
          nums ? ` (${nums})` : "",
        );
      }),
    ),
  );
}
