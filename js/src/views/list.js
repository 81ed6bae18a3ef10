// @ts-check
// The view panel's listing: one section per set_view class (header with its signature, a table
// of instances with their mode and current values), "show more" past a cap, and which section or
// row is the chosen scope. Pure DOM builders over `prepare(...)`'s data; every user string is text.

import { h, setFlag } from "../shared/dom.js";
import { fmtCount } from "../shared/format.js";
import { ALL, helpText } from "./data.js";

export const PER_CLASS = 50; // instance rows listed per class before "show more"
export const MORE_STEP = 500; // how many more each click lists

const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
export const plural = (n, word, many = `${word}s`) => `${fmtCount(n)} ${n === 1 ? word : many}`;

/** One instance's row: path, mode badge, a cell per argument of its class. */
export function instanceRow(doc, c, i, { odd, views }) {
  const tr = h(
    doc,
    "tr",
    {
      class: `nnx-views-instance${odd ? " odd-one" : ""}`,
      "data-path": i.path,
      "data-row": `${c.ci}:${i.ii}`,
      title: views ? `${i.path}: click (or Enter) to change only this instance` : i.path,
      tabindex: views ? "0" : null,
    },
    h(doc, "td", { class: "c-path" }, h(doc, "span", { class: "pt" }, i.path)),
    h(
      doc,
      "td",
      { class: "c-mode" },
      h(
        doc,
        "span",
        {
          class: "nnx-views-badge nnx-views-imode",
          "data-mode": i.mode || "",
          title: i.mode ? `mode: ${i.mode}` : "no train/eval argument",
        },
        i.mode || "\u2013",
      ),
    ),
  );
  for (const a of c.args) {
    const has = hasOwn(i.values, a.name);
    const v = has ? String(i.values[a.name]) : "";
    tr.appendChild(
      h(
        doc,
        "td",
        {
          class: has ? "c-val" : "c-val missing",
          "data-arg": a.name,
          title: has ? `${a.name} = ${v}` : `no attribute ${a.name}`,
        },
        has ? v : "\u2014",
      ),
    );
  }
  return tr;
}

/**
 * The narrowest a class's table may be (px): each argument's column as wide as the longest of its
 * name and its listed values (up to 24 characters), beside the mode column, with the path column's
 * 30% on top. A narrower output scrolls the list sideways under the sticky paths, so a header or a
 * `True` is read whole, never cut to "Tr…" or overlapping the next header.
 */
export function tableMinWidth(c, listed) {
  let chars = 0;
  for (const a of c.args) {
    chars = Math.max(chars, a.name.length);
    for (let r = 0; r < listed; r++) {
      const values = c.instances[r].values;
      if (hasOwn(values, a.name)) chars = Math.max(chars, Math.min(24, String(values[a.name]).length));
    }
  }
  const arg = 16 + Math.ceil(chars * 7.2); // the cells' padding and 11.5px monospace characters
  return Math.ceil((72 + c.args.length * arg) / 0.7);
}

/**
 * A class's section: the first `limit` instances (rows of paths in `disagreeing` marked), and a
 * "show more" button when there are more. `views`: rows and header are pickable (the views variant).
 */
export function classSection(doc, c, { limit, disagreeing, views }) {
  const k = c.instances.length;
  const n = Math.min(k, limit);
  const sig = c.args.map((a) =>
    a.annotation ? `${a.name}: ${a.annotation} = ${a.default}` : `${a.name} = ${a.default}`,
  );
  const headEl = h(
    doc,
    "div",
    {
      class: "nnx-views-class-head",
      role: views ? "button" : null,
      tabindex: views ? "0" : null,
      title: views ? `click to change every ${c.name} (only=${c.only})` : null,
    },
    h(doc, "span", { class: "name" }, c.name),
    h(doc, "span", { class: "n" }, plural(k, "instance")),
    h(doc, "span", { class: "sig" }, sig.length ? `set_view(${sig.join(", ")})` : "set_view() takes no arguments"),
  );
  const headRow = h(
    doc,
    "tr",
    null,
    h(doc, "th", { scope: "col" }, "path"),
    h(doc, "th", { scope: "col" }, "mode"),
    ...c.args.map((a) => h(doc, "th", { scope: "col", title: `${a.name}: ${helpText(a)}` }, a.name)),
  );
  const tbody = h(doc, "tbody");
  for (let r = 0; r < n; r++) {
    tbody.appendChild(instanceRow(doc, c, c.instances[r], { odd: disagreeing.has(c.instances[r].path), views }));
  }
  const sec = h(
    doc,
    "section",
    { class: "nnx-views-class", "data-class": c.name, "data-ci": c.ci },
    headEl,
    h(
      doc,
      "table",
      { class: "nnx-views-table", style: `min-width:${tableMinWidth(c, n)}px` },
      h(
        doc,
        "colgroup",
        null,
        h(doc, "col", { class: "k-path" }),
        h(doc, "col", { class: "k-mode" }),
        ...c.args.map(() => h(doc, "col")),
      ),
      h(doc, "thead", null, headRow),
      tbody,
    ),
  );
  if (n < k) {
    const more = Math.min(MORE_STEP, k - n);
    sec.appendChild(
      h(
        doc,
        "button",
        { class: "nnx-views-more", type: "button", "data-ci": c.ci },
        `show ${fmtCount(more)} more (${fmtCount(n)} of ${fmtCount(k)} listed)`,
      ),
    );
  }
  return sec;
}

/** Mark the section (scope "class") or the row (scope "path") that is the chosen scope. */
export function markSelection(list, prep, scope, selectedClasses, views) {
  const sel = new Set(views ? selectedClasses.map((c) => c.name) : []);
  const one = views && scope.type === "class";
  for (const sec of list.children) {
    setFlag(sec, "aria-selected", one && sel.has(sec.getAttribute("data-class")));
  }
  for (const tr of list.querySelectorAll("tr.nnx-views-instance")) {
    const [ci, ii] = tr.getAttribute("data-row").split(":").map(Number);
    const inst = prep.classes[ci] && prep.classes[ci].instances[ii];
    setFlag(tr, "aria-selected", Boolean(views && inst && scope.type === "path" && inst.keyId === scope.keyId));
  }
}

/**
 * The listing over the panel's state `st` ({prep, scope}): a click (or Enter/Space) on a class
 * header or an instance row of the views variant calls `onPick(scope)`, the same one again
 * `onPick(ALL)`; "show more" lists more rows. `fill()` shows the payload, `mark()` the scope.
 */
export function createList(doc, st, { onPick, views, selectedClasses }) {
  const list = h(doc, "div", { class: "nnx-views-list" });
  const shown = new Map(); // class name -> instance rows listed

  const section = (c) =>
    classSection(doc, c, {
      limit: shown.get(c.name) || PER_CLASS,
      disagreeing: new Set(st.prep.disagreeing),
      views: views(),
    });
  const mark = () => markSelection(list, st.prep, st.scope, selectedClasses(), views());

  function showMore(button) {
    const c = st.prep.classes[Number(button.getAttribute("data-ci"))];
    if (!c) return;
    shown.set(c.name, Math.min(c.instances.length, (shown.get(c.name) || PER_CLASS) + MORE_STEP));
    const old = list.children[c.ci];
    const sec = section(c);
    if (old) list.replaceChildren(...Array.from(list.children, (s) => (s === old ? sec : s)));
    mark();
  }

  /** The scope a row or header picks (null: not a pick), toggling back to all modules. */
  function picked(target) {
    const { prep, scope } = st;
    const tr = target.closest("tr.nnx-views-instance");
    if (tr) {
      const [ci, ii] = tr.getAttribute("data-row").split(":").map(Number);
      const inst = prep.classes[ci] && prep.classes[ci].instances[ii];
      if (!inst) return undefined;
      return scope.type === "path" && scope.keyId === inst.keyId
        ? ALL
        : { type: "path", key: inst.key, keyId: inst.keyId };
    }
    const headEl = target.closest("div.nnx-views-class-head");
    if (!headEl) return null;
    const c = prep.classes[Number(headEl.parentNode.getAttribute("data-ci"))];
    if (!c) return undefined;
    return scope.type === "class" && scope.name === c.name ? ALL : { type: "class", name: c.name };
  }

  /** Handle a click or key on `target`; true when it was the listing's own. */
  function choose(target) {
    if (!target || typeof target.closest !== "function") return false;
    const more = target.closest("button.nnx-views-more");
    if (more) {
      showMore(more);
      return true;
    }
    if (!views()) return false;
    const next = picked(target);
    if (next === null) return false;
    if (next) onPick(next);
    return true;
  }

  list.addEventListener("click", (ev) => choose(ev.target));
  list.addEventListener("keydown", (/** @type {import("../shared/dom.js").On<HTMLElement, KeyboardEvent>} */ ev) => {
    if (ev.key !== "Enter" && ev.key !== " ") return;
    const t = ev.target;
    if (!t || typeof t.closest !== "function") return;
    // a class header or an instance row (both focusable in the views variant), not a button inside
    const pickable = t.closest("div.nnx-views-class-head") || t.closest("tr.nnx-views-instance");
    if (pickable === t && choose(t)) ev.preventDefault();
  });

  return {
    list,
    mark,
    fill() {
      list.hidden = st.prep.classes.length === 0;
      list.replaceChildren(...st.prep.classes.map(section));
      mark();
    },
  };
}
