// @ts-check
// The view panel's head: the model's class, its mode badge, the train/eval switch, the "mixed
// modes" warning and the panel's message. Built once; `fill(prep)` shows a payload.

import { h, setFlag, setText } from "../shared/dom.js";
import { fmtCount } from "../shared/format.js";
import { plural } from "./list.js";

const MIXED_SHOWN = 12; // disagreeing paths named in the warning before "and N more"

/** The head; `onMode(mode)` runs when an enabled train/eval button is clicked. */
export function createHeader(doc, onMode) {
  const rootName = h(doc, "span", { class: "root" });
  const badge = h(doc, "span", { class: "nnx-views-badge nnx-views-mode" });
  const countEl = h(doc, "span", { class: "dim nnx-views-count" });
  const modeBtn = (mode) =>
    h(
      doc,
      "button",
      {
        type: "button",
        "data-mode": mode,
        "aria-pressed": "false",
        title: `model.${mode}() in place`,
      },
      mode,
      h(doc, "span", { class: "nnx-views-pending" }),
    );
  const trainBtn = modeBtn("train");
  const evalBtn = modeBtn("eval");
  const modeSwitch = h(
    doc,
    "span",
    { class: "nnx-views-switch", role: "group", "aria-label": "mode" },
    trainBtn,
    evalBtn,
  );
  const head = h(
    doc,
    "div",
    { class: "nnx-views-head" },
    rootName,
    h(doc, "span", { class: "sep" }, "\u00B7"),
    badge,
    countEl,
    modeSwitch,
  );
  const mixed = h(doc, "div", { class: "nnx-views-mixed", role: "alert", hidden: true });
  const message = h(doc, "div", { class: "nnx-views-message", hidden: true });

  for (const btn of [trainBtn, evalBtn]) {
    btn.addEventListener("click", () => {
      if (btn.getAttribute("disabled") === null) onMode(btn.getAttribute("data-mode"));
    });
  }

  function fillHead(prep) {
    setText(rootName, prep.root || "(model)");
    setText(badge, prep.mode);
    badge.setAttribute("data-mode", prep.mode);
    badge.setAttribute("title", prep.summary || `mode: ${prep.mode}`);
    setText(countEl, prep.countText || `${plural(prep.count, "module")} with set_view`);
    const nothing = prep.mode === "none";
    for (const b of [trainBtn, evalBtn]) {
      setFlag(b, "disabled", nothing);
      b.setAttribute(
        "title",
        nothing ? "no submodule has a train/eval argument" : `${prep.target}.${b.getAttribute("data-mode")}() in place`,
      );
    }
  }

  function fillMixed(prep) {
    const on = prep.mode === "mixed";
    mixed.hidden = !on;
    if (!on) return mixed.replaceChildren();
    const parts = mixedText(doc, prep);
    mixed.replaceChildren(...parts.map((x) => (typeof x === "string" ? doc.createTextNode(x) : x)));
    mixed.setAttribute("title", prep.summary);
  }

  function fillMessage(prep) {
    const text = prep.message || (prep.classes.length ? "" : `${prep.root || "the model"}: no submodule has set_view`);
    setText(message, text);
    message.hidden = !text;
  }

  return {
    elements: [head, mixed, message],
    trainBtn,
    evalBtn,
    fill(prep) {
      fillHead(prep);
      fillMixed(prep);
      fillMessage(prep);
    },
  };
}

/** The warning's parts (text, and each disagreeing path as a <code>) for a mixed model. */
function mixedText(doc, prep) {
  const odd = new Set(prep.disagreeing);
  const counts = new Map();
  const modeOf = new Map();
  for (const c of prep.classes) {
    for (const i of c.instances) {
      modeOf.set(i.path, i.mode);
      if ((i.mode === "train" || i.mode === "eval") && !odd.has(i.path))
        counts.set(i.mode, (counts.get(i.mode) || 0) + 1);
    }
  }
  const common = [...counts.entries()].sort((a, b) => b[1] - a[1])[0];
  const paths = prep.disagreeing;
  /** @type {Array<string | Node>} */
  const parts = [
    common ? `Mixed modes: most modules are ${common[0]}; not like them: ` : "Mixed modes; not like the rest: ",
  ];
  paths.slice(0, MIXED_SHOWN).forEach((p, k) => {
    if (k) parts.push(", ");
    parts.push(h(doc, "code", null, p));
    const m = modeOf.get(p);
    if (m) parts.push(` (${m})`);
  });
  if (paths.length > MIXED_SHOWN) parts.push(` and ${fmtCount(paths.length - MIXED_SHOWN)} more`);
  if (!paths.length) parts.push(prep.summary);
  return parts;
}
