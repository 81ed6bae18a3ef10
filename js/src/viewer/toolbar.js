// @ts-check
// The viewer's controls: the path filter and its match count, the type chips, the sparkline
// statistic, expand/collapse all; and the status line with "refresh now".

import { h } from "../shared/dom.js";
import { STAT_CHOICES } from "../shared/columns.js";
import { STAT_LABELS } from "../shared/constants.js";
import { fillStatus } from "./panels.js";

/**
 * The toolbar; callbacks: `onQuery(text)`, `onChip(type name)`, `onStat(name)` (a menu choice),
 * `onExpand(1 | 0)`.
 */
export function createToolbar(doc, { onQuery, onChip, onStat, onExpand }) {
  const filter = h(doc, "input", {
    class: "nnx-filter",
    type: "search",
    placeholder: "filter paths\u2026",
    spellcheck: "false",
    "aria-label": "filter variables by path",
  });
  const matches = h(doc, "span", { class: "nnx-matches" });
  const chips = h(doc, "div", { class: "nnx-chips" });
  const statSelect = h(
    doc,
    "select",
    {
      class: "nnx-tool nnx-stat",
      title: "statistic shown in the history sparklines",
      "aria-label": "sparkline statistic",
    },
    ...STAT_CHOICES.map((c) => h(doc, "option", { value: c }, STAT_LABELS[c] ?? c)),
  );
  const expandAll = h(
    doc,
    "button",
    { class: "nnx-tool nnx-expand-all", type: "button", title: "expand all modules" },
    "expand all",
  );
  const collapseAll = h(
    doc,
    "button",
    { class: "nnx-tool nnx-collapse-all", type: "button", title: "collapse all modules" },
    "collapse all",
  );
  const tools = h(
    doc,
    "div",
    { class: "nnx-tools" },
    h(doc, "label", { class: "nnx-muted" }, "trend ", statSelect),
    expandAll,
    collapseAll,
  );
  const el = h(doc, "div", { class: "nnx-bar-row" }, filter, matches, chips, tools);

  filter.addEventListener("input", () => onQuery(filter.value));
  // Keep notebook shortcuts (a, b, dd, arrows...) from firing while typing.
  for (const t of [filter, statSelect]) t.addEventListener("keydown", (ev) => ev.stopPropagation());
  chips.addEventListener("click", (/** @type {import("../shared/dom.js").On} */ ev) => {
    const chip = ev.target.closest ? ev.target.closest(".nnx-type-chip") : null;
    if (chip) onChip(chip.getAttribute("data-type"));
  });
  statSelect.addEventListener("change", () => onStat(statSelect.value));
  expandAll.addEventListener("click", () => onExpand(1));
  collapseAll.addEventListener("click", () => onExpand(0));

  const statOptions = new Set(STAT_CHOICES);
  return {
    el,
    filter,
    chips,
    tools, // where the table's column picker goes
    /** "n of m" Variables matching, or nothing without a filter. */
    setMatches(text) {
      matches.replaceChildren(...(text ? [text] : []));
    },
    showStat(value) {
      if (!statOptions.has(value)) {
        // A statistic set from Python that the menu does not list (e.g. zero_frac).
        statOptions.add(value);
        statSelect.appendChild(h(doc, "option", { value }, value));
      }
      statSelect.value = value;
    },
  };
}

/** The status line (state, message, refresh info) with a "refresh now" button calling `onRefresh`. */
export function createStatusLine(doc, onRefresh) {
  const slots = {
    state: h(doc, "span", { class: "state" }),
    msg: h(doc, "span", { class: "msg" }),
    info: h(doc, "span", { class: "info" }),
    button: h(doc, "button", { class: "nnx-tool nnx-refresh", type: "button" }, "refresh now"),
  };
  const el = h(doc, "div", { class: "nnx-status", role: "status" }, slots.state, slots.msg, slots.info, slots.button);
  slots.button.addEventListener("click", onRefresh);
  return { el, fill: (status) => fillStatus(doc, el, slots, status) };
}

/** Sets `el.dataset.firstPaintMs` once the first frame with rows has been painted (benchmarks read it). */
export function firstPaintMarker(el, t0) {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    requestAnimationFrame(() => {
      // After this frame's paint: a message posted now runs once the frame is done.
      const mark = () => {
        el.dataset.firstPaintMs = (performance.now() - t0).toFixed(1);
      };
      if (typeof MessageChannel !== "undefined") {
        const ch = new MessageChannel();
        ch.port1.onmessage = () => {
          ch.port1.close();
          mark();
        };
        ch.port2.postMessage(0);
      } else setTimeout(mark, 0);
    });
  };
}
