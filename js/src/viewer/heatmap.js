// @ts-check
// The layer × refresh heatmap of a stacked Variable: one cell per layer and refresh, coloured by the
// statistic the sparklines show, from the layer rows' history (no message of its own). SVG, every
// value also as text (a cell's tooltip, the readout line on hover). Opened from the group row's
// button; follows the Variable by path across structure changes.

import { onDarkBackground } from "../shared/colors.js";
import { h, s, setText } from "../shared/dom.js";
import { fmtNum } from "../shared/format.js";

// viridis at five stops (perceptually even, readable by colour-blind people)
const STOPS = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
];
const MISSING = "#d9d9d9";
const WIDTH = 560; // px of refreshes at most (fits a notebook output beside the layer labels)
const HEIGHT = 288; // px of layers at most

/** One row per layer (oldest refresh first, the newest at the right end), NaN where a value is missing. */
export function heatGrid(tree, history, r) {
  const ids = (tree && tree.layerKids && tree.layerKids.get(r)) || [];
  const series = ids.map((id) => (history ? history.series(id - tree.N) : new Float32Array(0)));
  const T = series.reduce((m, v) => Math.max(m, v.length), 0);
  const values = new Float64Array(ids.length * T).fill(NaN);
  let lo = Infinity;
  let hi = -Infinity;
  series.forEach((v, l) => {
    const offset = T - v.length;
    for (let k = 0; k < v.length; k++) {
      const x = v[k];
      values[l * T + offset + k] = x;
      if (Number.isFinite(x)) {
        if (x < lo) lo = x;
        if (x > hi) hi = x;
      }
    }
  });
  const layers = ids.map((id) => tree.rowLayer[id - tree.N]);
  return { L: ids.length, T, values, lo: lo <= hi ? lo : NaN, hi: lo <= hi ? hi : NaN, layers };
}

// On a dark background the scale starts at viridis' teal: its purple and blue end fall under 3:1 there.
export const DARK_FROM = 0.45;

/** The colour of `v` on the lo..hi scale (the middle colour when they are equal; grey: no value),
 * on viridis from `from` (0..1) to its yellow end. */
export function heatColor(v, lo, hi, from = 0) {
  if (!Number.isFinite(v)) return MISSING;
  const t = from + (1 - from) * (hi > lo ? Math.min(1, Math.max(0, (v - lo) / (hi - lo))) : 0.5);
  const x = t * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const c = STOPS[i].map((a, k) => Math.round(a + (STOPS[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** Cell sizes for L layers × T refreshes within the heatmap's box. */
export function cellSize(L, T) {
  return {
    w: Math.max(2, Math.min(14, Math.floor(WIDTH / Math.max(1, T)))),
    h: Math.max(2, Math.min(16, Math.floor(HEIGHT / Math.max(1, L)))),
  };
}

const CSS = `
.nnx-heatmap{margin:4px 0 6px;padding:4px 6px;border:1px solid var(--nnx-border,#ddd);border-radius:4px;font-size:12px}
.nnx-heatmap .hm-head{display:flex;gap:8px;align-items:center}
.nnx-heatmap .hm-title{font-family:var(--jp-code-font-family,monospace);font-weight:600}
.nnx-heatmap .hm-close{margin-left:auto;cursor:pointer;border:none;background:none;font-size:14px}
.nnx-heatmap .hm-readout{min-height:1.3em;font-family:var(--jp-code-font-family,monospace)}
.nnx-heatmap svg text{font-size:10px;fill:currentColor}
.nnx-heat{margin-left:6px;padding:0 3px;border:1px solid var(--nnx-border,#ccc);border-radius:3px;background:none;cursor:pointer;font-size:11px;line-height:14px}
`;

/**
 * The heatmap panel: `open(tree, r)`, `draw({tree, history, stat})` on every refresh, `close()`.
 * @param {Document} doc
 * @param {{onClose?: () => void}} [options]
 */
export function createHeatmap(doc, { onClose } = {}) {
  const title = h(doc, "span", { class: "hm-title" });
  const info = h(doc, "span", { class: "hm-info" });
  const close = h(doc, "button", { class: "hm-close", type: "button", title: "close the heatmap" }, "\u00d7");
  const plot = h(doc, "div", { class: "hm-plot" });
  const readout = h(doc, "div", { class: "hm-readout" });
  const el = h(
    doc,
    "div",
    { class: "nnx-heatmap", hidden: true },
    h(doc, "style", null, CSS),
    h(doc, "div", { class: "hm-head" }, title, info, close),
    plot,
    readout,
  );
  let path = null; // the stacked Variable shown (by path: it survives a structure change)
  let grid = null;
  let stat = "";

  close.addEventListener("click", () => {
    api.close();
    if (onClose) onClose();
  });
  plot.addEventListener("mouseover", (/** @type {import("../shared/dom.js").On} */ ev) => {
    const cell = ev.target && ev.target.getAttribute ? ev.target : null;
    const l = cell ? cell.getAttribute("data-l") : null;
    if (l === null || !grid) return;
    setText(readout, cellText(grid, Number(l), Number(cell.getAttribute("data-t")), stat));
  });

  const api = {
    el,
    get path() {
      return path;
    },
    open(tree, r) {
      path = tree.rowPath[r];
      el.hidden = false;
      setText(readout, "");
    },
    close() {
      path = null;
      grid = null;
      el.hidden = true;
      plot.replaceChildren();
    },
    /** Redraw from the layer rows' history (the Variable found again by path; gone: closed). */
    draw({ tree, history, stat: name }) {
      if (path === null) return;
      let r = -1;
      if (tree && tree.layerKids) for (const k of tree.layerKids.keys()) if (tree.rowPath[k] === path) r = k;
      if (r < 0) {
        api.close();
        return;
      }
      stat = name;
      grid = heatGrid(tree, history, r);
      setText(title, path);
      setText(
        info,
        `${name} \u00b7 ${grid.L} layers \u00d7 ${grid.T} refresh${grid.T === 1 ? "" : "es"} \u00b7 ` +
          `${fmtNum(grid.lo)} \u2026 ${fmtNum(grid.hi)}`,
      );
      plot.replaceChildren(drawGrid(doc, grid, name, onDarkBackground(el) ? DARK_FROM : 0));
    },
  };
  return api;
}

function cellText(grid, l, t, stat) {
  const v = grid.values[l * grid.T + t];
  const ago = grid.T - 1 - t;
  return `layer ${grid.layers[l]} \u00b7 ${ago === 0 ? "latest refresh" : `${ago} refresh${ago === 1 ? "" : "es"} ago`} \u00b7 ${stat} ${Number.isFinite(v) ? fmtNum(v) : "\u2014"}`;
}

function drawGrid(doc, grid, stat, from) {
  const { L, T, values, lo, hi } = grid;
  const { w, h: ch } = cellSize(L, T);
  const left = 52;
  const width = left + Math.max(1, T) * w;
  const height = Math.max(1, L) * ch + 2;
  const svg = s(doc, "svg", {
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: "img",
    "aria-label": `${stat} per layer and refresh`,
  });
  const every = Math.max(1, Math.ceil(12 / ch)); // a label every few layers when the cells are thin
  for (let l = 0; l < L; l++) {
    if (l % every === 0) {
      svg.appendChild(
        s(doc, "text", { x: left - 4, y: l * ch + ch / 2 + 3, "text-anchor": "end" }, `layer ${grid.layers[l]}`),
      );
    }
    for (let t = 0; t < T; t++) {
      const v = values[l * T + t];
      svg.appendChild(
        s(
          doc,
          "rect",
          {
            x: left + t * w,
            y: l * ch,
            width: w,
            height: ch,
            fill: heatColor(v, lo, hi, from),
            "data-l": l,
            "data-t": t,
          },
          s(doc, "title", null, cellText(grid, l, t, stat)),
        ),
      );
    }
  }
  return svg;
}
