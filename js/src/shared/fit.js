// @ts-check
// A table laid out for the width it is given (issue 35), for every widget's table:
// - fitColumns: which columns to fold so the rest fit, least important first (a column's `fold`:
//   the lower, the sooner it folds; none = never folds);
// - watchWidth: a ResizeObserver on the widget's own element, called when its width changes;
// - createColumnPicker: the "+N columns" control that lists every foldable column with a
//   checkbox, so a folded column is one click away (the user's choice wins over the fit);
// - fullTextOnHover: a cut cell (text-overflow: ellipsis) gets its full text as its title on hover.
// Columns are {id, label, width (px; null = takes the rest, at least `minWidth`), fold, title}.

import { h } from "./dom.js";

/** Width the columns of `ids` need: each its width, a flexible one (width null) `minWidth`. */
export function columnsWidth(columns, ids, minWidth = 150) {
  let w = 0;
  for (const c of columns) if (ids.has(c.id)) w += c.width ?? minWidth;
  return w;
}

/**
 * The ids to fold so that the `present` columns (a Set; all when omitted) fit in `width` px:
 * the foldable ones (with a `fold` rank) in rank order, lowest first, later columns first on a
 * tie, until the rest fit. `chosen` maps ids the user set to true (always shown) or false
 * (always folded). A width of 0 or less (not laid out yet) folds only what the user folded.
 */
export function fitColumns(columns, width, { present = null, chosen = new Map(), minWidth = 150 } = {}) {
  const shown = new Set(columns.filter((c) => !present || present.has(c.id)).map((c) => c.id));
  const folded = new Set();
  for (const [id, on] of chosen) {
    if (on === false && shown.has(id)) {
      shown.delete(id);
      folded.add(id);
    }
  }
  if (!(width > 0)) return folded;
  const order = columns
    .map((c, i) => ({ c, i }))
    .filter(({ c }) => c.fold !== undefined && shown.has(c.id) && chosen.get(c.id) !== true)
    .sort((a, b) => a.c.fold - b.c.fold || b.i - a.i);
  for (const { c } of order) {
    if (columnsWidth(columns, shown, minWidth) <= width) break;
    shown.delete(c.id);
    folded.add(c.id);
  }
  return folded;
}

/** Call `onWidth(px)` whenever `el`'s content width changes (and once it is first laid out). */
export function watchWidth(el, onWidth) {
  let last = -1;
  const ro =
    typeof ResizeObserver !== "undefined"
      ? new ResizeObserver(() => {
          const w = el.clientWidth;
          if (w === last) return;
          last = w;
          onWidth(w);
        })
      : null;
  if (ro) ro.observe(el);
  return { destroy: () => ro && ro.disconnect() };
}

/**
 * The column picker: a <details class="nnx-colpick"> whose summary says "+N columns" (N folded) or
 * "columns" (none), listing each foldable present column with a checkbox (checked = shown).
 * `onChange(id, on)` on a click. fill(columns, {present, folded}) redraws it; hidden when no
 * present column can fold.
 */
export function createColumnPicker(doc, { onChange }) {
  const summary = h(doc, "summary", { title: "show or hide columns" });
  const list = h(doc, "div", { class: "nnx-colpick-list" });
  const el = h(doc, "details", { class: "nnx-colpick", hidden: true }, summary, list);
  list.addEventListener("change", (/** @type {import("./dom.js").On<HTMLInputElement>} */ ev) => {
    const box = ev.target;
    if (box && box.matches && box.matches("input[data-col]")) onChange(box.getAttribute("data-col"), box.checked);
  });
  // Opened, the list is no taller than what the nearest clipping box (a widget's overflow:hidden
  // frame) shows below it: a short table's picker scrolls instead of being cut off.
  el.addEventListener("toggle", () => {
    if (!el.open) return;
    const view = el.ownerDocument.defaultView;
    let box = el.parentElement;
    while (box && view && view.getComputedStyle(box).overflow === "visible") box = box.parentElement;
    if (!box) return;
    const room = box.getBoundingClientRect().bottom - list.getBoundingClientRect().top - 4;
    list.style.maxHeight = `${Math.max(60, Math.floor(room))}px`;
  });
  // A click elsewhere or Escape closes it (Escape kept from the notebook's shortcuts).
  const doc2 = el.ownerDocument;
  function outside(ev) {
    if (el.open && !el.contains(ev.target)) el.open = false;
  }
  if (doc2 && doc2.addEventListener) doc2.addEventListener("pointerdown", outside, true);
  el.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape" || !el.open) return;
    el.open = false;
    ev.stopPropagation();
  });
  let sig = "";
  return {
    el,
    destroy: () => doc2 && doc2.removeEventListener && doc2.removeEventListener("pointerdown", outside, true),
    fill(columns, { present = null, folded = new Set() } = {}) {
      const foldable = columns.filter((c) => c.fold !== undefined && (!present || present.has(c.id)));
      const n = foldable.filter((c) => folded.has(c.id)).length;
      const next = JSON.stringify([foldable.map((c) => c.id), [...folded].sort()]);
      el.hidden = foldable.length === 0;
      if (next === sig) return;
      sig = next;
      summary.textContent = n ? `+${n} column${n === 1 ? "" : "s"}` : "columns";
      list.replaceChildren(
        ...foldable.map((c) =>
          h(
            doc,
            "label",
            { title: c.title || null },
            h(doc, "input", { type: "checkbox", "data-col": c.id, checked: folded.has(c.id) ? null : "" }),
            ` ${c.name || c.label}`,
          ),
        ),
      );
    },
  };
}

/** CSS for the picker under root selector `R` (theme colours `T` from styles.js THEME). */
export function columnPickerCss(R, T) {
  return `
${R} .nnx-colpick{position:relative;display:inline-block}
${R} .nnx-colpick>summary{list-style:none;cursor:pointer;height:22px;line-height:20px;padding:0 8px;
  border:1px solid ${T.BORDER};border-radius:3px;background:${T.BG2};white-space:nowrap}
${R} .nnx-colpick>summary::-webkit-details-marker{display:none}
${R} .nnx-colpick>summary:hover{border-color:${T.ACCENT}}
${R} .nnx-colpick[open]>summary{border-color:${T.ACCENT}}
${R} .nnx-colpick-list{position:absolute;right:0;top:24px;z-index:6;display:flex;flex-direction:column;
  gap:1px;padding:4px 8px;min-width:140px;background:${T.BG};border:1px solid ${T.BORDER};border-radius:3px;
  box-shadow:0 2px 6px rgba(0,0,0,0.2);overflow-y:auto}
${R} .nnx-colpick-list label{white-space:nowrap;cursor:pointer}`;
}

/**
 * A cell of `container` matching `selector` whose text is cut (wider than its box) gets its full
 * text as its title when the pointer enters it, unless it has a title already.
 */
export function fullTextOnHover(container, selector = "td, th") {
  function over(ev) {
    const cell = ev.target && ev.target.closest ? ev.target.closest(selector) : null;
    if (!cell || !container.contains(cell) || cell.hasAttribute("title")) return;
    if (cell.scrollWidth > cell.clientWidth + 1) cell.setAttribute("title", cell.textContent.trim());
  }
  container.addEventListener("mouseover", over);
  return { destroy: () => container.removeEventListener("mouseover", over) };
}
