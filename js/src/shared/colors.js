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

/** Colour of filter `index` (0-based); with `alpha` < 1 a translucent tint of it. */
export function filterColor(index, alpha = 1) {
  const i = Math.max(0, Math.floor(Number(index) || 0));
  if (i < FILTER_COLORS.length) {
    if (alpha >= 1) return FILTER_COLORS[i];
    const [r, g, b] = hexRgb(FILTER_COLORS[i]);
    return `rgba(${r},${g},${b},${alpha})`;
  }
  const hue = Math.round((i * 137.508) % 360);
  return alpha >= 1 ? `hsl(${hue}, 60%, 45%)` : `hsla(${hue}, 60%, 45%, ${alpha})`;
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
