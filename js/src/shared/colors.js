// @ts-check
// Variable type -> colour. Fixed colours for flax's own types, a stable hashed hue otherwise.
import { FILTER_COLORS } from "./constants.js";
import { h } from "./dom.js";

export const TYPE_COLORS = {
  Param: "#4c78a8",
  BatchStat: "#f58518",
  RngKey: "#b279a2",
  RngCount: "#9d755d",
  Intermediate: "#54a24b",
  Cache: "#72b7b2",
  Variable: "#8c8c8c",
};

/** 32-bit FNV-1a of a string. */
export function hash32(str) {
  let h = 0x811c9dc5;
  for (let i = 0; i < str.length; i++) {
    h ^= str.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export function typeColor(name) {
  const key = String(name ?? "");
  if (Object.prototype.hasOwnProperty.call(TYPE_COLORS, key)) return TYPE_COLORS[key];
  return `hsl(${hash32(key) % 360}, 50%, 52%)`;
}

// Filter index -> colour, for the split report's filter columns. The first eight are
// nnx_lab.core.render.FILTER_COLORS (the static HTML fallback); later ones step round the hue
// circle by the golden angle, so every index gets its own colour.
export { FILTER_COLORS };

function hexRgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** Colour of filter `index` (0-based); with `alpha` < 1 a translucent tint of it. `light`: the
 * colour mixed 45% towards white, for text and marks on a dark background (4.5:1 there). */
export function filterColor(index, alpha = 1, light = false) {
  const i = Math.max(0, Math.floor(Number(index) || 0));
  if (i < FILTER_COLORS.length) {
    if (alpha >= 1 && !light) return FILTER_COLORS[i];
    const [r, g, b] = hexRgb(FILTER_COLORS[i]).map((c) => (light ? Math.round(c + (255 - c) * 0.45) : c));
    return alpha >= 1 ? `rgb(${r},${g},${b})` : `rgba(${r},${g},${b},${alpha})`;
  }
  const hue = Math.round((i * 137.508) % 360);
  const l = light ? 72 : 45;
  return alpha >= 1 ? `hsl(${hue}, 60%, ${l}%)` : `hsla(${hue}, 60%, ${l}%, ${alpha})`;
}

/** A table's Variable-type cell: the type's colour dot and its name (as text), in a chip. */
export function typeCell(doc, type) {
  return h(
    doc,
    "td",
    { class: "c-type", title: type },
    h(
      doc,
      "span",
      { class: "chip" },
      h(doc, "span", { class: "nnx-dot", style: `background:${typeColor(type)}` }),
      h(doc, "span", { class: "t" }, type),
    ),
  );
}

/** Whether `el` is drawn on a dark background: its text colour (the theme's foreground) is light. */
export function onDarkBackground(el) {
  const view = el && el.ownerDocument && el.ownerDocument.defaultView;
  if (!view || !el.isConnected) return false;
  const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(view.getComputedStyle(el).color || "");
  return !!m && 0.2126 * Number(m[1]) + 0.7152 * Number(m[2]) + 0.0722 * Number(m[3]) > 140;
}
