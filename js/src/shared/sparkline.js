// @ts-check
// Sparkline geometry (pure): an SVG path through the finite values, gaps at NaN.

function r1(x) {
  return Math.round(x * 10) / 10;
}

/** SVG path data for `values` (oldest first) in a w×h box with `pad` px inside; "" if none. */
export function sparkPath(values, w, h, pad = 1) {
  const n = values.length;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (Number.isFinite(v)) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  if (lo === Infinity) return "";
  // Values arrive rounded to 4 significant digits, some via float32: a span below that
  // precision is noise, drawn flat rather than blown up to full height.
  const span = hi - lo <= 1e-5 * Math.max(Math.abs(lo), Math.abs(hi)) ? 0 : hi - lo;
  const x = (i) => r1(n === 1 ? w / 2 : pad + (i * (w - 2 * pad)) / (n - 1));
  const y = (v) => r1(span === 0 ? h / 2 : h - pad - ((v - lo) * (h - 2 * pad)) / span);
  let d = "";
  let pen = false;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) {
      pen = false;
      continue;
    }
    const nextFinite = i + 1 < n && Number.isFinite(values[i + 1]);
    if (!pen && !nextFinite) {
      // An isolated point: a short flat tick so that it shows.
      d += `M${r1(x(i) - 1)} ${y(v)}h2`;
    } else {
      d += `${pen ? "L" : "M"}${x(i)} ${y(v)}`;
    }
    pen = true;
  }
  return d;
}
