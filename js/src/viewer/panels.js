// @ts-check
// The small pieces around the table: title line with device strip, NaN/Inf banner, type chips,
// status line. Each fill function rebuilds its piece from data, with text nodes only.

import { h } from "../shared/dom.js";
import { typeColor } from "../shared/colors.js";
import { fmtBytes, fmtClock, fmtCount, fmtMs, fmtNonfinite } from "../shared/format.js";

/** Title: "Model · 6 variables · 84 B". */
export function fillTitle(doc, el, snap) {
  if (!snap || snap.version === undefined) {
    el.replaceChildren(h(doc, "span", { class: "nnx-dim" }, "waiting for the first snapshot\u2026"));
    return;
  }
  const all = (snap.totals && snap.totals.all) || {};
  const n = all.count ?? (snap.rows && snap.rows.parent ? snap.rows.parent.length : 0);
  const sep = () => h(doc, "span", { class: "nnx-sep" }, "\u00B7");
  el.replaceChildren(
    h(doc, "span", null, snap.root_type || "(object)"),
    sep(),
    h(doc, "span", { class: "nnx-dim" }, `${fmtCount(n)} variable${n === 1 ? "" : "s"}`),
    sep(),
    h(doc, "span", { class: "nnx-dim", title: `${fmtCount(all.bytes)} bytes` }, fmtBytes(all.bytes ?? 0)),
  );
}

/** Device strip: "cpu · cpu × 1", then per device in-use / peak / limit and a bar. */
export function fillDevices(doc, el, devices) {
  el.replaceChildren();
  if (!devices || typeof devices !== "object") return;
  const kind = devices.device_kind || "";
  const head = [devices.platform, kind && `${kind} \u00D7 ${fmtCount(devices.count ?? (devices.devices || []).length)}`]
    .filter(Boolean)
    .join(" \u00B7 ");
  if (head) el.appendChild(h(doc, "span", { class: "nnx-dev-head" }, head));
  for (const d of devices.devices || []) {
    const use = d.bytes_in_use;
    const peak = d.peak_bytes_in_use;
    const limit = d.bytes_limit;
    if (use === null && peak === null && limit === null) continue;
    if (use === undefined && peak === undefined && limit === undefined) continue;
    const parts = [];
    if (use !== null && use !== undefined) parts.push(fmtBytes(use));
    if (peak !== null && peak !== undefined) parts.push(`peak ${fmtBytes(peak)}`);
    if (limit !== null && limit !== undefined) parts.push(`of ${fmtBytes(limit)}`);
    const name = `${d.platform || devices.platform || "dev"}:${d.id ?? ""}`;
    const item = h(
      doc,
      "span",
      { class: "nnx-dev", "data-device": String(d.id ?? ""), title: `${name} ${d.kind || ""}`.trim() },
      h(doc, "span", { class: "nnx-muted" }, name),
      parts.join(" / "),
    );
    if (limit) {
      const bar = h(doc, "span", { class: "nnx-bar" });
      const pct = (x) => `${Math.max(0, Math.min(100, (100 * x) / limit)).toFixed(1)}%`;
      if (use !== null && use !== undefined) bar.appendChild(h(doc, "span", { style: `width:${pct(use)}` }));
      if (peak !== null && peak !== undefined)
        bar.appendChild(h(doc, "span", { class: "peak", style: `width:${pct(peak)}` }));
      item.appendChild(bar);
    }
    el.appendChild(item);
  }
}

/** The first row with NaN/Inf (row order) and how many rows have any; null when none. */
export function firstNonfinite(snap) {
  const st = (snap && snap.stats) || {};
  const nan = st.nan_count || [];
  const inf = st.inf_count || [];
  const n = Math.max(nan.length, inf.length);
  let first = -1;
  let count = 0;
  for (let r = 0; r < n; r++) {
    if ((nan[r] || 0) > 0 || (inf[r] || 0) > 0) {
      if (first < 0) first = r;
      count += 1;
    }
  }
  return first < 0 ? null : { row: first, nan: nan[first] || 0, inf: inf[first] || 0, count };
}

/** The alert's one line, written by Python (NonfiniteAlert.to_dict: head, where, tail), never here. */
export function alertParts(alert) {
  return { head: String(alert.head ?? ""), where: String(alert.where ?? ""), tail: String(alert.tail ?? "") };
}

function rowOfPath(tree, path) {
  if (!tree || !tree.rowPath) return -1;
  for (let r = 0; r < tree.rowPath.length; r++) if (tree.rowPath[r] === path) return r;
  return -1;
}

/**
 * The NaN/Inf banner. With an `alert` (Python's, kept until cleared): where and at which step a
 * NaN/Inf first appeared, what is non-finite now, and a clear button; without one, the rows that
 * hold NaN/Inf in this snapshot. `data-row` is the row a click reveals.
 */
export function fillBanner(doc, el, snap, tree, alert = null) {
  const bad = firstNonfinite(snap);
  const alerted = alert && alert.where !== undefined;
  if (!alerted && (!bad || !tree)) {
    el.hidden = true;
    el.replaceChildren();
    el.removeAttribute("data-row");
    el.removeAttribute("data-sig");
    return;
  }
  el.hidden = false;
  let row;
  let sig;
  if (alerted) {
    row = alert.source === "variable" ? rowOfPath(tree, alert.where) : -1;
    if (row < 0 && bad) row = bad.row;
    sig = `alert:${JSON.stringify(alert)}:${row}`;
  } else {
    row = bad.row;
    sig = `${bad.row}:${bad.nan}:${bad.inf}:${bad.count}:${tree.rowPath[bad.row]}`;
  }
  if (el.getAttribute("data-sig") === sig) return;
  el.setAttribute("data-sig", sig);
  if (row >= 0) el.setAttribute("data-row", String(row));
  else el.removeAttribute("data-row");
  el.setAttribute(
    "data-state",
    alerted ? (alert.now_variables || (alert.now_scalars || []).length ? "bad" : "clean") : "bad",
  );
  if (alerted) {
    const { head, where, tail } = alertParts(alert);
    el.replaceChildren(
      h(doc, "span", { class: "icon" }, "\u26A0"),
      h(doc, "span", { class: "nnx-banner-text" }, head, h(doc, "code", null, where), tail),
      h(
        doc,
        "button",
        { class: "nnx-tool nnx-banner-clear", type: "button", title: "dismiss until the next NaN/Inf" },
        "clear",
      ),
    );
  } else {
    const more = bad.count > 1 ? ` (+${bad.count - 1} more variable${bad.count === 2 ? "" : "s"})` : "";
    el.replaceChildren(
      h(doc, "span", { class: "icon" }, "\u26A0"),
      "NaN/Inf in ",
      h(doc, "code", null, tree.rowPath[bad.row] || "(root)"),
      `: ${fmtNonfinite(bad.nan, bad.inf)}${more}`,
    );
  }
  if (row >= 0) el.setAttribute("title", "show this variable");
  else el.removeAttribute("title");
}

/** One chip per Variable type in totals (count, bytes); `active` is the filtered type. */
export function fillChips(doc, el, snap, active) {
  el.replaceChildren();
  const totals = (snap && snap.totals) || {};
  for (const name of Object.keys(totals)) {
    if (name === "all") continue;
    const t = totals[name] || {};
    el.appendChild(
      h(
        doc,
        "button",
        {
          class: "nnx-type-chip",
          type: "button",
          "data-type": name,
          "aria-pressed": active === name ? "true" : "false",
          title: `${name}: ${fmtCount(t.count)} variables, ${fmtCount(t.size)} elements, ${fmtCount(t.bytes)} bytes (click to filter)`,
        },
        h(doc, "span", { class: "nnx-dot", style: `background:${typeColor(name)}` }),
        h(doc, "span", null, name),
        h(doc, "span", { class: "n" }, `${fmtCount(t.count)} \u00B7 ${fmtBytes(t.bytes ?? 0)}`),
      ),
    );
  }
}

// What a state says when the status carries no message of its own.
const DEFAULT_MESSAGE = {
  gone: "model is gone (garbage-collected)",
  error: "refresh failed",
  missing: "the followed name holds no model",
};

/** Status line pieces (state, message, last refresh, cost, count); the button stays. */
export function fillStatus(doc, el, slots, status) {
  const st = status || {};
  const state = st.state || "waiting";
  el.setAttribute("data-state", state);
  slots.state.replaceChildren(String(state));
  const msg = st.message ? String(st.message) : DEFAULT_MESSAGE[state] || "";
  slots.msg.replaceChildren(msg);
  slots.msg.hidden = !msg;
  const bits = [];
  if (st.last_refresh !== null && st.last_refresh !== undefined) bits.push(`last refresh ${fmtClock(st.last_refresh)}`);
  if (st.cost_ms !== null && st.cost_ms !== undefined) {
    const device = st.device_ms !== null && st.device_ms !== undefined ? ` + ${fmtMs(st.device_ms)} device` : "";
    bits.push(`refresh cost ${fmtMs(st.cost_ms)}${device ? " host" + device : ""}`);
  }
  if (st.refreshes !== null && st.refreshes !== undefined)
    bits.push(`${fmtCount(st.refreshes)} refresh${st.refreshes === 1 ? "" : "es"}`);
  if (state === "live" && st.interval_s) bits.push(`every ${fmtMs(st.interval_s * 1000)}`);
  slots.info.replaceChildren(bits.join(" \u00B7 "));
  slots.button.disabled = state === "gone" || state === "disconnected" || state === "saved";
  slots.button.title =
    state === "disconnected"
      ? "its kernel is gone: run the cell again for a live viewer"
      : state === "saved"
        ? "a saved copy: there is no kernel to refresh from"
        : "";
}
