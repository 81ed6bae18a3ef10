// @ts-check
// nnx_lab view panel and mode toggle: an anywidget front end for ViewPanel. Shows the mode of
// every submodule instance with set_view (grouped by class), switches train/eval in place, and
// (variant "views") builds `nnx.view(model, only=..., **values)` / `model.set_attributes(...)`
// from one control per set_view argument, showing the exact Python line. Clicks go to the kernel
// as custom messages; each control shows "pending…" until the kernel acks its id (a busy kernel
// reads them only when the running cell ends, or at the next tick()/track() step).
// Uses only anywidget's model API (get, on, off, send); every user string goes in as text.
//
// The widget is composed of components, each over the shared state `st`: views/header.js (head,
// mode switch, warning, message), views/editor.js (scope, controls, name, code lines),
// views/list.js (class sections and instance rows), views/requests.js (requests and status).

import { h, setFlag } from "./shared/dom.js";
import { watchWidth } from "./shared/fit.js";
import { ALL, keepScope, onlyJson, prepare, scopeClasses } from "./views/data.js";
import { codeRow, createEditor, showCode } from "./views/editor.js";
import { createHeader } from "./views/header.js";
import { createList } from "./views/list.js";
import { createRequests } from "./views/requests.js";
import { viewsCss } from "./views/styles.js";
import { MSG } from "./shared/constants.js";

const NARROW_PX = 560; // below this width the form stacks each argument's help under its control

/**
 * @typedef {object} ViewsTraits the widget's synced traits (nnx_lab/widgets/views.py, typed by traits.py)
 * @property {import("./shared/wire").ViewsPayload} payload
 * @property {string} busy_note
 */

/** @param {import("./shared/model").RenderProps<ViewsTraits>} props */
function render({ model, el }) {
  const doc = el.ownerDocument || document;
  const cleanups = [];
  const st = {
    prep: prepare({}),
    scope: ALL,
    raw: {}, // argument name -> what its control holds ("unset"|"true"|"false" or typed text)
    name: null, // the view's name once the user edits it (null: follows default_name)
    ran: { view: "", apply: "", mode: "" }, // an ack's code, shown until the next edit
    doneMode: null, // a mode the kernel acked before the payload showing it came
  };
  const isViews = () => st.prep.variant === "views";

  function setScope(next) {
    st.scope = next;
    st.ran.view = "";
    st.ran.apply = "";
    editor.showScope();
    list.mark();
  }

  const header = createHeader(doc, (mode) => requests.send({ type: MSG.MODE, mode }, `mode:${mode}`));
  const editor = createEditor(doc, st, {
    onScope: setScope,
    onCreate: (values, name) => requests.send({ type: MSG.VIEW, only: onlyJson(st.scope), values, name }, "view"),
    onApply: (values) => requests.send({ type: MSG.APPLY, only: onlyJson(st.scope), values }, "apply"),
    cleanups,
  });
  const list = createList(doc, st, {
    onPick: setScope,
    views: isViews,
    selectedClasses: () => scopeClasses(st.prep, st.scope),
  });
  const modeRow = codeRow(doc, "mode", h(doc, "span", { class: "lbl" }, "ran"), cleanups);
  modeRow.row.hidden = true;
  const buttons = { train: header.trainBtn, eval: header.evalBtn, create: editor.createBtn, apply: editor.applyBtn };
  const requests = createRequests(doc, model, st, buttons, () => {
    if (st.ran.mode) {
      showCode(modeRow.code, st.ran.mode, true, false);
      modeRow.row.hidden = false;
    }
    if (isViews()) editor.fillPreview();
  });

  const root = h(doc, "div", { class: "nnx-lab-views", "data-variant": "views" });
  root.append(
    h(doc, "style", null, viewsCss()),
    ...header.elements,
    modeRow.row,
    editor.form,
    requests.status,
    list.list,
  );
  el.replaceChildren(root);
  // Narrow (an 800 px window with the file browser open), each argument's help goes under its
  // control instead of a column squeezed to one character per line.
  const width = watchWidth(root, (w) => setFlag(root, "data-narrow", w > 0 && w < NARROW_PX));
  cleanups.push(() => width.destroy());

  function onPayload() {
    st.prep = prepare(model.get("payload"));
    st.doneMode = null;
    st.scope = keepScope(st.prep, st.scope);
    root.setAttribute("data-variant", st.prep.variant);
    header.fill(st.prep);
    editor.form.hidden = !isViews() || st.prep.classes.length === 0 || st.prep.gone;
    if (isViews()) editor.showPayload();
    list.fill();
    requests.fillSwitch();
  }

  const onMsg = (msg) => requests.onAck(msg);
  model.on("change:payload", onPayload);
  model.on("msg:custom", onMsg);
  cleanups.push(
    () => model.off("change:payload", onPayload),
    () => model.off("msg:custom", onMsg),
  );
  onPayload();

  return () => {
    for (const c of cleanups) c();
  };
}

export default { render };
