// @ts-check
// The view panel's argument controls: a tri-state (unset/True/False) for bool and `bool | None`
// arguments, a text input (an int, or a Python literal the kernel parses safely) for the rest,
// and one row per argument with its signature and docstring help. Every user string is text.

import { h } from "../shared/dom.js";
import { helpText } from "./data.js";

const LABELS = { unset: "unset", true: "True", false: "False" };

/** Press the button whose data-value is `value`. */
export function markTri(buttons, value) {
  for (const b of buttons) b.setAttribute("aria-pressed", b.getAttribute("data-value") === value ? "true" : "false");
}

/** unset/True/False buttons for argument `a`, showing `value`; `onPick(v)` after a click. */
export function triControl(doc, a, value, onPick) {
  const titles = {
    unset: `leave ${a.name} as it is (not passed)`,
    true: `${a.name}=True`,
    false: `${a.name}=False`,
  };
  const buttons = ["unset", "true", "false"].map((v) => {
    const b = h(
      doc,
      "button",
      { type: "button", "data-value": v, title: titles[v], "aria-pressed": "false" },
      LABELS[v],
    );
    b.addEventListener("click", () => {
      markTri(buttons, v);
      onPick(v);
    });
    return b;
  });
  markTri(buttons, value || "unset");
  const node = h(
    doc,
    "span",
    { class: "nnx-views-seg nnx-views-tri", role: "group", "data-arg": a.name, "aria-label": a.name },
    ...buttons,
  );
  return { node, buttons, input: null };
}

/** A text input for argument `a` holding `value`; `onInput(text)` on every edit. */
export function inputControl(doc, a, value, onInput) {
  const input = h(doc, "input", {
    class: "nnx-views-input",
    type: "text",
    "data-arg": a.name,
    "data-kind": a.kind,
    inputmode: a.kind === "int" ? "numeric" : null,
    placeholder: a.default,
    spellcheck: "false",
    autocomplete: "off",
    "aria-label": a.name,
    title:
      a.kind !== "int"
        ? "a Python literal (parsed with ast.literal_eval); empty: not passed"
        : `an integer${a.nullable ? " or None" : ""}; empty: not passed`,
  });
  input.value = value || "";
  input.addEventListener("input", () => onInput(input.value));
  return { node: input, input, buttons: null };
}

/**
 * One row per argument: name (with the classes taking it when `several` do), its control, an
 * error slot and the docstring help. `raw` holds what each control shows; `onEdit(name, raw)`.
 * Returns {rows, els: Map(name -> {err, input, buttons})}.
 */
export function argumentRows(doc, args, { raw, several, onEdit }) {
  const els = new Map();
  const rows = args.map((a) => {
    const edit = (v) => onEdit(a.name, v);
    const ctl =
      a.kind === "tri_bool" || a.kind === "bool"
        ? triControl(doc, a, raw[a.name], edit)
        : inputControl(doc, a, raw[a.name], edit);
    const err = h(doc, "span", { class: "nnx-views-err" });
    els.set(a.name, { err, input: ctl.input, buttons: ctl.buttons });
    const sig = a.annotation ? `${a.name}: ${a.annotation} = ${a.default}` : `${a.name} = ${a.default}`;
    return h(
      doc,
      "div",
      { class: "nnx-views-arg", "data-name": a.name, "data-kind": a.kind },
      h(
        doc,
        "div",
        { class: "nm", title: sig },
        a.name,
        several
          ? h(doc, "span", { class: "cls", title: `taken by ${a.classes.join(", ")}` }, a.classes.join(", "))
          : null,
      ),
      h(doc, "div", { class: "ctl" }, ctl.node, err),
      h(doc, "div", { class: "help", title: sig }, helpText(a)),
    );
  });
  if (!rows.length) rows.push(h(doc, "div", { class: "nnx-views-none" }, "these modules' set_view takes no arguments"));
  return { rows, els };
}
