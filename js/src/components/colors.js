// Variable type -> colour. Fixed colours for flax's own types, a stable hashed hue otherwise.

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
