// @ts-check
// The capture panel's toggles: which Variable types to collect, method outputs, a checkbox per
// submodule. A click goes to Python as a custom message; Python validates it and re-sends
// `controls` naming the last message it applied, so until then the toggle says it is waiting (or
// queued, when the kernel acks it during a busy cell), and a refused click is undone.

import { h, setText } from "../shared/dom.js";
import { typeColor } from "../shared/colors.js";
import { keyText } from "../shared/format.js";
import { Requests } from "../shared/requests.js";
import { moduleTree, modulesSummary } from "./data.js";
import { MSG } from "../shared/constants.js";

const INDENT = 14;
const WAITING = "toggle sent: waiting for the kernel (a running cell reads it when it ends)";
const QUEUED = "toggle queued: applies at the panel's next call";
const CHANGED = "toggles changed: they apply from the next call";

function typeToggle(doc, t, seen) {
  const name = String(t.name);
  const input = h(doc, "input", { type: "checkbox", "data-type": name, "aria-label": `collect ${name}` });
  input.checked = !!t.on;
  const title = [t.title || name, t.doc || "", seen.has(name) ? "sown in the last call" : ""]
    .filter(Boolean)
    .join("\n");
  return h(
    doc,
    "label",
    { class: `nnx-capture-toggle${t.on ? " on" : ""}${seen.has(name) ? " seen" : ""}`, title },
    input,
    h(doc, "span", { class: "nnx-dot", style: `background:${typeColor(name)}` }),
    h(doc, "span", { class: "nm" }, name),
  );
}

function moduleToggle(doc, mod, i, tree) {
  const path = String(mod.path ?? "");
  const input = h(doc, "input", { type: "checkbox", "data-module": path, "aria-label": `capture ${path || "(root)"}` });
  input.checked = !!tree.checked[i];
  input.indeterminate = !!tree.mixed[i];
  const key = tree.parent[i] < 0 ? path || "(root)" : keyText(mod.key, true);
  return h(
    doc,
    "label",
    {
      class: "nnx-capture-module",
      style: `padding-left:${tree.depth[i] * INDENT}px`,
      title: `${path || "(root)"}${mod.cls ? ` \u00B7 ${mod.cls}` : ""}${mod.on ? "" : "\n(its own values are not captured)"}`,
    },
    input,
    h(doc, "span", { class: "k" }, key),
    mod.cls ? h(doc, "span", { class: "cls" }, String(mod.cls)) : null,
  );
}

/** The toggles of `model`'s `controls` trait; `seen()` names the types sown in the last call. */
export function createToggles(doc, model, seen) {
  const requests = new Requests(); // toggles sent that the kernel has not applied yet
  const types = h(doc, "div", {
    class: "nnx-capture-group nnx-capture-types",
    role: "group",
    "aria-label": "Variable types to collect",
  });
  const methods = h(doc, "div", { class: "nnx-capture-group" });
  const summary = h(doc, "summary");
  const moduleList = h(doc, "div", {
    class: "nnx-capture-module-list",
    role: "group",
    "aria-label": "submodules to capture",
  });
  const allBtn = h(
    doc,
    "button",
    { type: "button", class: "nnx-capture-all", title: "capture every submodule" },
    "all",
  );
  const noneBtn = h(
    doc,
    "button",
    { type: "button", class: "nnx-capture-none", title: "capture no submodule" },
    "none",
  );
  const modules = h(
    doc,
    "details",
    { class: "nnx-capture-modules" },
    summary,
    h(doc, "div", { class: "nnx-capture-module-tools" }, allBtn, noneBtn),
    moduleList,
  );
  const controls = h(doc, "div", { class: "nnx-capture-controls" }, types, methods, modules);
  const pending = h(doc, "div", { class: "nnx-capture-pending", role: "status", hidden: true });

  function fillPending() {
    const c = model.get("controls") || {};
    const open = [...requests.open.values()];
    const state = open.some((r) => r.state === "queued")
      ? "queued"
      : open.length
        ? "pending"
        : c.pending
          ? "changed"
          : "";
    pending.hidden = !state;
    pending.setAttribute("data-state", state);
    const waiting = model.get("busy_note") ? `toggle sent: ${model.get("busy_note")}` : WAITING; // no subshells: Colab, VS Code
    setText(pending, state === "queued" ? QUEUED : state === "pending" ? waiting : state ? CHANGED : "");
  }

  function fill() {
    const c = model.get("controls") || {};
    const sown = new Set(seen());
    types.replaceChildren(
      h(doc, "span", { class: "lbl" }, "collect"),
      ...(Array.isArray(c.types) ? c.types : []).map((t) => typeToggle(doc, t, sown)),
    );
    const m = h(doc, "input", {
      type: "checkbox",
      class: "nnx-capture-methods",
      "aria-label": "record method outputs",
    });
    m.checked = !!c.methods;
    methods.replaceChildren(
      h(
        doc,
        "label",
        {
          class: `nnx-capture-toggle${c.methods ? " on" : ""}`,
          title: "record the output of every method of every chosen submodule (nnx.capture's method_outputs)",
        },
        m,
        h(doc, "span", { class: "nm" }, "method outputs"),
      ),
    );
    const list = Array.isArray(c.modules) ? c.modules : [];
    const tree = moduleTree(list);
    summary.replaceChildren("modules ", h(doc, "span", { class: "dim" }, modulesSummary(tree)));
    moduleList.replaceChildren(...list.map((mod, i) => moduleToggle(doc, mod, i, tree)));
    requests.settle(c.answered);
    fillPending();
  }

  /** @param {import("../shared/wire").ToPython} msg */
  function send(msg) {
    model.send(requests.start(msg, "toggle"));
    fillPending();
  }

  controls.addEventListener("change", (/** @type {import("../shared/dom.js").On<HTMLInputElement>} */ ev) => {
    const t = ev.target;
    if (!t || !t.getAttribute) return;
    const on = !!t.checked;
    const type = t.getAttribute("data-type");
    const mod = t.getAttribute("data-module");
    if (type !== null) send({ type: MSG.TOGGLE_TYPE, name: type, on });
    else if (mod !== null) send({ type: MSG.TOGGLE_MODULE, path: mod, on });
    else if (t.classList && t.classList.contains("nnx-capture-methods")) send({ type: MSG.TOGGLE_METHODS, on });
  });
  allBtn.addEventListener("click", () => send({ type: MSG.TOGGLE_MODULES, on: true }));
  noneBtn.addEventListener("click", () => send({ type: MSG.TOGGLE_MODULES, on: false }));
  // Keep notebook shortcuts (space, a, b, dd...) from firing while using the controls.
  controls.addEventListener("keydown", (ev) => ev.stopPropagation());

  return {
    controls,
    pending,
    fill,
    /** @param {import("../shared/wire").ToBrowser} msg */
    onAck(msg) {
      if (msg && msg.type === MSG.ACK && requests.ack(msg)) fillPending();
    },
  };
}
