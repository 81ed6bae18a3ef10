// @ts-check
// The view panel's form (variant "views"): the scope chooser ("only"), one control per set_view
// argument of the scope, the view's name, and the two lines the buttons run ("create view",
// "apply in place"), previewed live as the values are edited.

import { copyButton } from "../shared/copy.js";
import { h, setFlag, setText } from "../shared/dom.js";
import {
  applyCode,
  collectValues,
  nameError,
  scopeArgs,
  scopeClasses,
  scopeFromValue,
  scopeLabel,
  scopeOptions,
  scopeValue,
  viewCode,
} from "./data.js";
import { argumentRows } from "./form.js";
import { plural } from "./list.js";

/** A line of Python with a copy button after `lead` (a button or a label). */
export function codeRow(doc, action, lead, cleanups) {
  const code = h(doc, "code", { class: "nnx-views-code", "data-action": action });
  const copy = copyButton(doc, code, "nnx-views-copy");
  cleanups.push(copy.destroy);
  const row = h(
    doc,
    "div",
    { class: "nnx-views-action", "data-action": action },
    lead,
    h(doc, "div", { class: "nnx-views-codebox" }, code, copy.button),
  );
  return { row, code, copy: copy.button };
}

/** Show `text` in a code row: `done` once it ran in the kernel, `idle` while nothing is set. */
export function showCode(code, text, done, idle) {
  setText(code, text);
  setFlag(code, "data-ran", done);
  setFlag(code, "data-idle", idle && !done);
  code.setAttribute("title", done ? "ran in the kernel" : "what the button runs");
}

const actBtn = (doc, cls, label, title) =>
  h(
    doc,
    "button",
    { class: `act ${cls}`, type: "button", title },
    label,
    h(doc, "span", { class: "nnx-views-pending" }),
  );

/**
 * The form over the panel's state `st` ({prep, scope, raw, name, ran}). Callbacks: `onScope(scope)`
 * when the chooser changes, `onCreate(values, name)` and `onApply(values)` for enabled buttons.
 */
export function createEditor(doc, st, { onScope, onCreate, onApply, cleanups }) {
  const select = h(doc, "select", { class: "nnx-views-scope", "aria-label": "only: the modules to change" });
  const scopeInfo = h(doc, "span", { class: "dim nnx-views-scope-info" });
  const controls = h(doc, "div", { class: "nnx-views-controls" });
  const nameInput = h(doc, "input", {
    class: "nnx-views-name",
    type: "text",
    spellcheck: "false",
    autocomplete: "off",
    "aria-label": "name of the view",
  });
  const nameErr = h(doc, "span", { class: "nnx-views-err" });
  const createBtn = actBtn(
    doc,
    "nnx-views-create",
    "create view",
    "bind nnx.view(...) to the name above: the model is not changed",
  );
  const applyBtn = actBtn(
    doc,
    "nnx-views-apply",
    "apply in place",
    "set these attributes on the model itself (set_attributes)",
  );
  const viewRow = codeRow(doc, "view", createBtn, cleanups);
  const applyRow = codeRow(doc, "apply", applyBtn, cleanups);
  const form = h(
    doc,
    "div",
    { class: "nnx-views-form" },
    h(doc, "div", { class: "nnx-views-row" }, h(doc, "span", { class: "lbl" }, "only"), select, scopeInfo),
    controls,
    h(doc, "div", { class: "nnx-views-row" }, h(doc, "span", { class: "lbl" }, "name"), nameInput, nameErr),
    viewRow.row,
    applyRow.row,
  );

  let args = []; // the arguments of the current scope, as scopeArgs gives them
  let argsKey = null; // args as JSON: the controls are rebuilt only when it changes
  let argEls = new Map(); // argument name -> {err, input, buttons}

  const currentName = () => (st.name === null ? st.prep.defaultName : st.name).trim();

  function fillScope() {
    const value = scopeValue(st.prep, st.scope);
    const groups = { classes: null, instances: null };
    const nodes = [];
    for (const o of scopeOptions(st.prep, st.scope)) {
      const opt = h(doc, "option", { value: o.value, selected: o.value === value }, o.label);
      if (!o.group) nodes.push(opt);
      else {
        if (!groups[o.group]) nodes.push((groups[o.group] = h(doc, "optgroup", { label: o.group })));
        groups[o.group].appendChild(opt);
      }
    }
    select.replaceChildren(...nodes);
    select.value = value;
  }

  function fillControls() {
    args = scopeArgs(st.prep, st.scope);
    const key = JSON.stringify(args);
    if (key === argsKey) return;
    argsKey = key;
    const several = scopeClasses(st.prep, st.scope).length > 1;
    const onEdit = (n, v) => {
      st.raw[n] = v;
      st.ran.view = "";
      st.ran.apply = "";
      fillPreview();
    };
    const built = argumentRows(doc, args, { raw: st.raw, several, onEdit });
    argEls = built.els;
    controls.replaceChildren(...built.rows);
  }

  function fillPreview() {
    const { prep, scope, ran } = st;
    const { values, errors, count } = collectValues(args, st.raw);
    for (const [n, els] of argEls) {
      setText(els.err, errors[n] || "");
      if (els.input) setFlag(els.input, "aria-invalid", Boolean(errors[n]));
    }
    const nm = currentName();
    const bad = nameError(nm);
    setText(nameErr, bad);
    setFlag(nameInput, "aria-invalid", Boolean(bad));
    const why = Object.keys(errors).length
      ? "fix the values marked in red"
      : count === 0
        ? "set at least one value above"
        : "";
    setFlag(createBtn, "disabled", Boolean(why || bad));
    setFlag(applyBtn, "disabled", Boolean(why));
    createBtn.setAttribute("title", why || bad || `bind the view to ${nm}: the model is not changed`);
    applyBtn.setAttribute(
      "title",
      why || `set ${Object.keys(values).join(", ")} on ${scopeLabel(prep, scope)} of the model itself`,
    );
    showCode(viewRow.code, ran.view || viewCode(prep, scope, args, values, nm), Boolean(ran.view), count === 0);
    showCode(applyRow.code, ran.apply || applyCode(prep, scope, args, values), Boolean(ran.apply), count === 0);
    const k = scopeClasses(prep, scope).reduce((s, c) => s + c.instances.length, 0);
    setText(
      scopeInfo,
      scope.type === "all"
        ? `${plural(prep.classes.length, "class", "classes")}, ${plural(k, "instance")}`
        : scope.type === "class"
          ? plural(k, "instance")
          : "one instance",
    );
  }

  const enabled = (b) => b.getAttribute("disabled") === null;
  createBtn.addEventListener("click", () => {
    if (enabled(createBtn)) onCreate(collectValues(args, st.raw).values, currentName());
  });
  applyBtn.addEventListener("click", () => {
    if (enabled(applyBtn)) onApply(collectValues(args, st.raw).values);
  });
  select.addEventListener("change", () => onScope(scopeFromValue(st.prep, select.value)));
  nameInput.addEventListener("input", () => {
    st.name = nameInput.value;
    st.ran.view = "";
    fillPreview();
  });

  return {
    form,
    createBtn,
    applyBtn,
    fillPreview,
    /** A new scope (the chooser lists an instance past its cap once chosen). */
    showScope() {
      fillScope();
      fillControls();
      fillPreview();
    },
    /** A new payload: the scope kept, the name following default_name until edited. */
    showPayload() {
      fillScope();
      fillControls();
      if (st.name === null) nameInput.value = st.prep.defaultName;
      fillPreview();
    },
  };
}
