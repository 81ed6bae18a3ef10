// @ts-check
// The viewer's "compare to" control: pin a baseline (the current statistics: free; a device copy
// of the arrays: its bytes said first; a snapshot or checkpoint path) and show each row's change
// since it in the "since" column while training goes on. Python computes the change
// (widgets/viewer_baseline.py) and sends it per refresh as a "since" message.

import { h, setText } from "../shared/dom.js";
import { fmtBytes } from "../shared/format.js";
import { MSG } from "../shared/constants.js";

/** The menu's choice for a pinned baseline's kind (a Snapshot has no choice of its own but this one). */
const CHOICE_OF_KIND = { stats: "stats", arrays: "arrays", checkpoint: "path", snapshot: "snapshot" };

/** The control; `onPin({source, path})` asks Python to pin (source: none | stats | arrays | path). */
export function createBaselineBar(doc, { onPin }) {
  const choice = h(
    doc,
    "select",
    { class: "nnx-tool nnx-baseline-choice", "aria-label": "compare to a baseline" },
    h(doc, "option", { value: "none" }, "nothing"),
    h(doc, "option", { value: "stats" }, "the current statistics (free)"),
    h(doc, "option", { value: "arrays" }, "the current arrays (device copy)"),
    h(doc, "option", { value: "path" }, "a checkpoint path\u2026"),
    h(doc, "option", { value: "snapshot", hidden: true, disabled: true }, "a snapshot (pinned from Python)"),
  );
  const path = h(doc, "input", {
    class: "nnx-text-input nnx-baseline-path", // styled as the filter, not one (the filter is .nnx-filter)
    type: "text",
    placeholder: "checkpoint directory",
    spellcheck: "false",
    hidden: true,
  });
  const pinButton = h(doc, "button", { class: "nnx-tool nnx-baseline-pin", type: "button" }, "pin");
  const label = h(doc, "span", { class: "nnx-muted nnx-baseline-label" });
  const el = h(
    doc,
    "div",
    { class: "nnx-bar-row nnx-baseline" },
    h(doc, "label", { class: "nnx-muted" }, "compare to ", choice),
    path,
    pinButton,
    label,
  );
  for (const t of [choice, path]) t.addEventListener("keydown", (ev) => ev.stopPropagation());
  choice.addEventListener("change", () => {
    path.hidden = choice.value !== "path";
  });
  pinButton.addEventListener("click", () => {
    setText(label, choice.value === "none" ? "" : "pinning\u2026");
    onPin({ source: choice.value, path: path.value });
  });
  /** The menu shows what is pinned, wherever it was pinned from (viewer.compare_to in Python too). */
  function selectPinned(b) {
    const value = b ? CHOICE_OF_KIND[b.kind] || "stats" : "none";
    /** @type {HTMLElement} */ (choice.children[4]).hidden = value !== "snapshot";
    choice.value = value;
    path.hidden = value !== "path";
    if (value === "path" && b.path) path.value = String(b.path);
  }
  return {
    el,
    choice,
    /** Whether pinning can be asked for (not once the kernel restarted: nobody would answer). */
    setEnabled(on) {
      for (const t of [choice, path, pinButton]) t.disabled = !on;
    },
    /** The bytes a device copy would take (the model's), said in the menu before anyone pins. */
    setCopyCost(bytes) {
      const opt = choice.children[2];
      setText(opt, bytes ? `the current arrays (device copy: ${fmtBytes(bytes)})` : "the current arrays (device copy)");
    },
    /** What is pinned (the "since" message's baseline), or a problem in one line. */
    show(msg) {
      if (msg && msg.type === MSG.ACK) {
        if (msg.state === "error") setText(label, String(msg.message || "not pinned"));
        return;
      }
      const b = msg && msg.baseline;
      selectPinned(b);
      const text = b ? `since: ${b.label}${msg.problem ? ` \u2014 ${msg.problem}` : ""}` : "";
      setText(label, text);
      label.classList.toggle("bad", !!(msg && msg.problem));
    },
  };
}

/** The payload with each row's change since the baseline (stats.since) when the message fits its rows. */
export function withSince(snap, since) {
  const rows = snap && snap.rows && snap.rows.parent ? snap.rows.parent.length : 0;
  if (!since || !Array.isArray(since.values) || since.values.length !== rows) return snap;
  return { ...snap, stats: { ...(snap.stats || {}), since: since.values } };
}
