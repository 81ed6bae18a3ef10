// nnx_lab view panel and mode toggle: an anywidget front end for ViewPanel. Shows the mode of
// every submodule instance with set_view (grouped by class), switches train/eval in place, and
// (variant "views") builds `nnx.view(model, only=..., **values)` / `model.set_attributes(...)`
// from one control per set_view argument, showing the exact Python line. Clicks go to the kernel
// as custom messages; each control shows "pending…" until the kernel acks its id (a busy kernel
// reads them only when the running cell ends, or at the next tick()/track() step).
// Uses only anywidget's model API (get, on, off, send); every user string goes in as text.

import { copyButton } from "./shared/copy.js";
import { h, setFlag, setText } from "./shared/dom.js";
import { fmtCount } from "./shared/format.js";
import { viewsCss } from "./views/styles.js";
import {
  ALL, applyCode, collectValues, keepScope, nameError, onlyJson,
  prepare, scopeArgs, scopeClasses, scopeFromValue, scopeLabel, scopeOptions, scopeValue, viewCode,
} from "./views/data.js";
import { Requests } from "./shared/requests.js";
import { argumentRows } from "./views/form.js";
import { MORE_STEP, PER_CLASS, classSection, markSelection as markRows, plural } from "./views/list.js";

const MIXED_SHOWN = 12; // disagreeing paths named in the warning before "and N more"
const QUEUED = "pending \u2014 applies at the next step";
const PENDING = "pending\u2026";

const isDisabled = (b) => b.getAttribute("disabled") !== null;

function render({ model, el }) {
  const doc = el.ownerDocument || document;
  const cleanups = [];

  let prep = prepare({});
  let scope = ALL;
  const raw = {}; // argument name -> what its control holds ("unset"|"true"|"false" or typed text)
  let name = null; // the view's name once the user edits it (null: follows default_name)
  const ran = { view: "", apply: "", mode: "" }; // an ack's code, shown until the next edit
  const shown = new Map(); // class name -> instance rows listed
  const requests = new Requests();
  let args = []; // the arguments of the current scope, as scopeArgs gives them
  let argsKey = null; // args as JSON: the controls are rebuilt only when it changes
  let argEls = new Map(); // argument name -> {err, input, buttons}
  let doneMode = null; // a mode the kernel acked before the payload showing it came

  // --- DOM -----------------------------------------------------------------------------------
  const root = h(doc, "div", { class: "nnx-lab-views", "data-variant": "views" });
  const rootName = h(doc, "span", { class: "root" });
  const badge = h(doc, "span", { class: "nnx-views-badge nnx-views-mode" });
  const countEl = h(doc, "span", { class: "dim nnx-views-count" });
  const modeBtn = (mode) => h(doc, "button", {
    type: "button", "data-mode": mode, "aria-pressed": "false", title: `model.${mode}() in place`,
  }, mode, h(doc, "span", { class: "nnx-views-pending" }));
  const trainBtn = modeBtn("train");
  const evalBtn = modeBtn("eval");
  const modeSwitch = h(doc, "span", { class: "nnx-views-switch", role: "group", "aria-label": "mode" }, trainBtn, evalBtn);
  const head = h(doc, "div", { class: "nnx-views-head" },
    rootName, h(doc, "span", { class: "sep" }, "\u00B7"), badge, countEl, modeSwitch);
  const mixed = h(doc, "div", { class: "nnx-views-mixed", role: "alert", hidden: true });
  const message = h(doc, "div", { class: "nnx-views-message", hidden: true });

  const select = h(doc, "select", { class: "nnx-views-scope", "aria-label": "only: the modules to change" });
  const scopeInfo = h(doc, "span", { class: "dim nnx-views-scope-info" });
  const controls = h(doc, "div", { class: "nnx-views-controls" });
  const nameInput = h(doc, "input", {
    class: "nnx-views-name", type: "text", spellcheck: "false", autocomplete: "off",
    "aria-label": "name of the view",
  });
  const nameErr = h(doc, "span", { class: "nnx-views-err" });

  function codeRow(action, lead) {
    const code = h(doc, "code", { class: "nnx-views-code", "data-action": action });
    const copy = copyButton(doc, code, "nnx-views-copy");
    cleanups.push(copy.destroy);
    const row = h(doc, "div", { class: "nnx-views-action", "data-action": action },
      lead, h(doc, "div", { class: "nnx-views-codebox" }, code, copy.button));
    return { row, code, copy: copy.button };
  }
  const actBtn = (cls, label, title) => h(doc, "button", { class: `act ${cls}`, type: "button", title },
    label, h(doc, "span", { class: "nnx-views-pending" }));
  const createBtn = actBtn("nnx-views-create", "create view", "bind nnx.view(...) to the name above: the model is not changed");
  const applyBtn = actBtn("nnx-views-apply", "apply in place", "set these attributes on the model itself (set_attributes)");
  const viewRow = codeRow("view", createBtn);
  const applyRow = codeRow("apply", applyBtn);
  const modeRow = codeRow("mode", h(doc, "span", { class: "lbl" }, "ran"));
  modeRow.row.hidden = true;

  const form = h(doc, "div", { class: "nnx-views-form" },
    h(doc, "div", { class: "nnx-views-row" }, h(doc, "span", { class: "lbl" }, "only"), select, scopeInfo),
    controls,
    h(doc, "div", { class: "nnx-views-row" }, h(doc, "span", { class: "lbl" }, "name"), nameInput, nameErr),
    viewRow.row,
    applyRow.row);
  const status = h(doc, "div", { class: "nnx-views-status", role: "status", "aria-live": "polite" });
  const list = h(doc, "div", { class: "nnx-views-list" });
  root.append(h(doc, "style", null, viewsCss()), head, mixed, message, modeRow.row, form, status, list);
  el.replaceChildren(root);

  const isViews = () => prep.variant === "views";

  // --- header, warning, message ---------------------------------------------------------------

  function fillHead() {
    root.setAttribute("data-variant", prep.variant);
    setText(rootName, prep.root || "(model)");
    setText(badge, prep.mode);
    badge.setAttribute("data-mode", prep.mode);
    badge.setAttribute("title", prep.summary || `mode: ${prep.mode}`);
    setText(countEl, `${plural(prep.count, "module")} with set_view`);
    const nothing = prep.mode === "none";
    for (const b of [trainBtn, evalBtn]) {
      setFlag(b, "disabled", nothing);
      b.setAttribute("title", nothing ? "no submodule has a train/eval argument"
        : `${prep.target}.${b.getAttribute("data-mode")}() in place`);
    }
  }

  function fillMixed() {
    const on = prep.mode === "mixed";
    mixed.hidden = !on;
    if (!on) return mixed.replaceChildren();
    const odd = new Set(prep.disagreeing);
    const counts = new Map();
    const modeOf = new Map();
    for (const c of prep.classes) {
      for (const i of c.instances) {
        modeOf.set(i.path, i.mode);
        if ((i.mode === "train" || i.mode === "eval") && !odd.has(i.path)) counts.set(i.mode, (counts.get(i.mode) || 0) + 1);
      }
    }
    const common = [...counts.entries()].sort((a, b) => b[1] - a[1])[0];
    const paths = prep.disagreeing;
    const parts = [common ? `Mixed modes: most modules are ${common[0]}; not like them: ` : "Mixed modes; not like the rest: "];
    paths.slice(0, MIXED_SHOWN).forEach((p, k) => {
      if (k) parts.push(", ");
      parts.push(h(doc, "code", null, p));
      const m = modeOf.get(p);
      if (m) parts.push(` (${m})`);
    });
    if (paths.length > MIXED_SHOWN) parts.push(` and ${fmtCount(paths.length - MIXED_SHOWN)} more`);
    if (!paths.length) parts.push(prep.summary);
    mixed.replaceChildren(...parts.map((x) => (typeof x === "string" ? doc.createTextNode(x) : x)));
    mixed.setAttribute("title", prep.summary);
  }

  function fillMessage() {
    const text = prep.message || (prep.classes.length ? "" : `${prep.root || "the model"}: no submodule has set_view`);
    setText(message, text);
    message.hidden = !text;
  }

  // --- scope and controls ---------------------------------------------------------------------

  function fillScope() {
    const opts = scopeOptions(prep, scope);
    const groups = { classes: null, instances: null };
    const nodes = [];
    const value = scopeValue(prep, scope);
    for (const o of opts) {
      const opt = h(doc, "option", { value: o.value, selected: o.value === value }, o.label);
      if (!o.group) nodes.push(opt);
      else {
        if (!groups[o.group]) {
          groups[o.group] = h(doc, "optgroup", { label: o.group });
          nodes.push(groups[o.group]);
        }
        groups[o.group].appendChild(opt);
      }
    }
    select.replaceChildren(...nodes);
    select.value = value;
  }

  function fillControls() {
    args = scopeArgs(prep, scope);
    const key = JSON.stringify(args);
    if (key === argsKey) return;
    argsKey = key;
    const several = scopeClasses(prep, scope).length > 1;
    const onEdit = (n, v) => {
      raw[n] = v;
      edited();
    };
    const { rows, els } = argumentRows(doc, args, { raw, several, onEdit });
    argEls = els;
    controls.replaceChildren(...rows);
  }

  function currentName() {
    return (name === null ? prep.defaultName : name).trim();
  }

  function fillPreview() {
    const { values, errors, count } = collectValues(args, raw);
    for (const [n, els] of argEls) {
      setText(els.err, errors[n] || "");
      if (els.input) setFlag(els.input, "aria-invalid", Boolean(errors[n]));
    }
    const nm = currentName();
    const bad = nameError(nm);
    setText(nameErr, bad);
    setFlag(nameInput, "aria-invalid", Boolean(bad));
    const hasErrors = Object.keys(errors).length > 0;
    const why = hasErrors ? "fix the values marked in red" : count === 0 ? "set at least one value above" : "";
    setFlag(createBtn, "disabled", Boolean(why || bad));
    setFlag(applyBtn, "disabled", Boolean(why));
    createBtn.setAttribute("title", why || bad || `bind the view to ${nm}: the model is not changed`);
    applyBtn.setAttribute("title", why || `set ${Object.keys(values).join(", ")} on ${scopeLabel(prep, scope)} of the model itself`);
    showCode(viewRow.code, ran.view || viewCode(prep, scope, args, values, nm), Boolean(ran.view), count === 0);
    showCode(applyRow.code, ran.apply || applyCode(prep, scope, args, values), Boolean(ran.apply), count === 0);
    const n = prep.classes.length;
    const k = scopeClasses(prep, scope).reduce((s, c) => s + c.instances.length, 0);
    setText(scopeInfo, scope.type === "all" ? `${plural(n, "class", "classes")}, ${plural(k, "instance")}`
      : scope.type === "class" ? plural(k, "instance") : "one instance");
  }

  function showCode(code, text, done, idle) {
    setText(code, text);
    setFlag(code, "data-ran", done);
    setFlag(code, "data-idle", idle && !done);
    code.setAttribute("title", done ? "ran in the kernel" : "what the button runs");
  }

  function edited() {
    ran.view = "";
    ran.apply = "";
    fillPreview();
  }

  function setScope(next) {
    scope = next;
    fillScope(); // an instance past the chooser's cap gets its option

    ran.view = "";
    ran.apply = "";
    fillControls();
    fillPreview();
    markSelection();
  }

  // --- listing --------------------------------------------------------------------------------

  function section(c) {
    return classSection(doc, c, { limit: shown.get(c.name) || PER_CLASS, disagreeing: new Set(prep.disagreeing),
      views: isViews() });
  }

  function fillList() {
    list.hidden = prep.classes.length === 0;
    list.replaceChildren(...prep.classes.map(section));
    markSelection();
  }

  function markSelection() {
    markRows(list, prep, scope, scopeClasses(prep, scope), isViews());
  }

  function chooseFrom(target) {
    if (!target || typeof target.closest !== "function") return false;
    const more = target.closest("button.nnx-views-more");
    if (more) {
      const c = prep.classes[Number(more.getAttribute("data-ci"))];
      if (!c) return true;
      shown.set(c.name, Math.min(c.instances.length, (shown.get(c.name) || PER_CLASS) + MORE_STEP));
      const old = list.children[c.ci];
      const sec = section(c);
      if (old) list.replaceChildren(...Array.from(list.children, (s) => (s === old ? sec : s)));
      markSelection();
      return true;
    }
    if (!isViews()) return false;
    const tr = target.closest("tr.nnx-views-instance");
    if (tr) {
      const [ci, ii] = tr.getAttribute("data-row").split(":").map(Number);
      const inst = prep.classes[ci] && prep.classes[ci].instances[ii];
      if (!inst) return true;
      const again = scope.type === "path" && scope.keyId === inst.keyId;
      setScope(again ? ALL : { type: "path", key: inst.key, keyId: inst.keyId });
      return true;
    }
    const headEl = target.closest("div.nnx-views-class-head");
    if (headEl) {
      const c = prep.classes[Number(headEl.parentNode.getAttribute("data-ci"))];
      if (!c) return true;
      const again = scope.type === "class" && scope.name === c.name;
      setScope(again ? ALL : { type: "class", name: c.name });
      return true;
    }
    return false;
  }

  list.addEventListener("click", (ev) => chooseFrom(ev.target));
  list.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" && ev.key !== " ") return;
    const t = ev.target;
    if (!t || typeof t.closest !== "function") return;
    // a class header or an instance row (both focusable in the views variant), not a button inside
    const pickable = t.closest("div.nnx-views-class-head") || t.closest("tr.nnx-views-instance");
    if (pickable === t && chooseFrom(t)) ev.preventDefault();
  });

  // --- requests -------------------------------------------------------------------------------

  function describe(req) {
    const m = req.msg;
    if (req.type === "mode") return `${prep.target}.${m.mode}()`;
    if (req.type === "view") return `create view ${m.name}`;
    return "apply in place";
  }

  function markPending(btn, reqs) {
    const span = btn.querySelector("span.nnx-views-pending");
    const n = reqs.length;
    const queued = reqs.some((r) => r.state === "queued");
    setText(span, n ? `${PENDING}${n > 1 ? ` (${n})` : ""}` : "");
    setFlag(btn, "aria-busy", n > 0);
    if (n) btn.setAttribute("data-state", queued ? "queued" : "pending");
    else btn.removeAttribute("data-state");
  }

  function fillSwitch() {
    // the newest mode click still waiting shows as chosen; with none (or after an error) the model's mode
    const newest = [...requests.open.values()].filter((r) => r.type === "mode").pop();
    const want = newest ? newest.msg.mode : doneMode || prep.mode;
    trainBtn.setAttribute("aria-pressed", want === "train" ? "true" : "false");
    evalBtn.setAttribute("aria-pressed", want === "eval" ? "true" : "false");
    markPending(trainBtn, requests.of("mode:train"));
    markPending(evalBtn, requests.of("mode:eval"));
    markPending(createBtn, requests.of("view"));
    markPending(applyBtn, requests.of("apply"));
  }

  function setStatus(state, text) {
    const others = requests.size;
    const tail = (state === "done" || state === "error") && others ? ` \u00B7 ${fmtCount(others)} more pending` : "";
    status.setAttribute("data-state", state);
    setText(status, text + tail);
  }

  function send(msg, control) {
    const full = requests.start(msg, control);
    model.send(full);
    const req = requests.open.get(full.id);
    status.setAttribute("title", "sent; a kernel busy with a cell reads it when the cell ends, or at the next tick()/track() step");
    setStatus("pending", `${describe(req)}: ${PENDING} ${model.get("busy_note") || "waiting for the kernel"}`); // busy_note: no subshells
    fillSwitch();
    return full;
  }

  function onAck(msg) {
    if (!msg || msg.type !== "ack") return;
    const req = requests.ack(msg);
    if (!req) return;
    const what = describe(req);
    status.setAttribute("title", req.text);
    if (req.state === "queued") {
      setStatus("queued", `${what}: ${QUEUED}`);
    } else if (req.state === "done") {
      if (req.code) ran[req.type] = req.code;
      if (req.type === "mode") doneMode = req.msg.mode; // until the payload that shows it arrives
      setStatus("done", req.text || `${what}: done`);
    } else {
      setStatus("error", req.text || `${what} failed`);
    }
    if (ran.mode) {
      showCode(modeRow.code, ran.mode, true, false);
      modeRow.row.hidden = false;
    }
    fillSwitch();
    if (isViews()) fillPreview();
  }

  // --- events ---------------------------------------------------------------------------------

  for (const btn of [trainBtn, evalBtn]) {
    btn.addEventListener("click", () => {
      if (isDisabled(btn)) return;
      const mode = btn.getAttribute("data-mode");
      send({ type: "mode", mode }, `mode:${mode}`);
    });
  }

  createBtn.addEventListener("click", () => {
    if (isDisabled(createBtn)) return;
    const { values } = collectValues(args, raw);
    send({ type: "view", only: onlyJson(scope), values, name: currentName() }, "view");
  });

  applyBtn.addEventListener("click", () => {
    if (isDisabled(applyBtn)) return;
    const { values } = collectValues(args, raw);
    send({ type: "apply", only: onlyJson(scope), values }, "apply");
  });

  select.addEventListener("change", () => setScope(scopeFromValue(prep, select.value)));

  nameInput.addEventListener("input", () => {
    name = nameInput.value;
    ran.view = "";
    fillPreview();
  });

  // --- data -----------------------------------------------------------------------------------

  function onPayload() {
    prep = prepare(model.get("payload"));
    doneMode = null;
    scope = keepScope(prep, scope);
    fillHead();
    fillMixed();
    fillMessage();
    form.hidden = !isViews() || prep.classes.length === 0 || prep.gone;
    if (isViews()) {
      fillScope();
      fillControls();
      if (name === null) nameInput.value = prep.defaultName;
      fillPreview();
    }
    fillList();
    fillSwitch();
  }

  const onChange = () => onPayload();
  const onMsg = (msg) => onAck(msg);
  model.on("change:payload", onChange);
  model.on("msg:custom", onMsg);
  cleanups.push(() => model.off("change:payload", onChange), () => model.off("msg:custom", onMsg));

  onPayload();

  return () => {
    for (const c of cleanups) c();
  };
}

export default { render };
