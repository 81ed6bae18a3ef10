// @ts-check
// A widget's table laid out for its width (issue 35), on shared/fit.js: the summary, compare,
// capture and split widgets each keep one. It watches the widget's root, folds the least important
// columns (their `fold` rank) until the rest fit the table's room, keeps the "+N columns" picker
// in step (a user's choice wins over the fit) and gives a cut cell its full text on hover.

import { createColumnPicker, fitColumns, fullTextOnHover, watchWidth } from "./fit.js";

// Room the columns lose inside a widget's root: its padding (panelFrameCss: 8 px a side), the
// scroll box's borders (1 px a side) and a vertical scrollbar (Chromium's is 15 px).
export const TABLE_CHROME = 16 + 2 + 16;

/** The room `rootWidth` (a root's clientWidth) leaves for the columns. */
export function tableRoom(rootWidth) {
  return rootWidth > 0 ? rootWidth - TABLE_CHROME : 0;
}

/**
 * tableFit(doc, {root, scroller, minWidth, onChange}) -> {picker, set(columns, present), shown(columns),
 * folded(), destroy()}. `set` gives the columns (all of them, in order; `present`: the ids this
 * payload has, all when null) and recomputes the fold without calling back; `onChange()` runs
 * when a resize or a pick changes which columns show (redraw the header and rows then).
 */
export function tableFit(doc, { root, scroller, minWidth = 150, onChange }) {
  let columns = [];
  let present = null;
  let width = 0;
  let folded = new Set();
  const chosen = new Map();

  function compute() {
    const next = fitColumns(columns, tableRoom(width), { present, chosen, minWidth });
    const same = next.size === folded.size && [...next].every((id) => folded.has(id));
    folded = next;
    picker.fill(columns, { present, folded });
    return !same;
  }
  const picker = createColumnPicker(doc, {
    onChange(id, on) {
      chosen.set(id, on);
      compute();
      onChange();
    },
  });
  const watch = watchWidth(root, (w) => {
    width = w;
    if (compute()) onChange();
  });
  const hover = fullTextOnHover(scroller);

  return {
    picker: picker.el,
    set(cols, ids = null) {
      columns = cols;
      present = ids;
      compute();
    },
    /** `cols` less the folded ones. */
    shown: (cols) => cols.filter((c) => !folded.has(c.id)),
    folded: () => folded,
    destroy() {
      watch.destroy();
      hover.destroy();
      if (picker.destroy) picker.destroy();
    },
  };
}
