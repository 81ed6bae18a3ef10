// @ts-check
// Virtualization window math (pure).

/**
 * Which rows [first, last) to put in the DOM for a viewport of `viewportH` pixels scrolled to
 * `scrollTop` (measured from the first row), `rowH` pixels a row, `total` rows, plus `overscan`
 * rows either side.
 */
export function windowRange(scrollTop, viewportH, rowH, total, overscan = 10) {
  if (total <= 0 || rowH <= 0) return { first: 0, last: 0 };
  const top = Math.max(0, scrollTop);
  const vh = Math.max(0, viewportH);
  let first = Math.floor(top / rowH) - overscan;
  let last = Math.ceil((top + vh) / rowH) + overscan;
  first = Math.min(Math.max(0, first), total);
  last = Math.min(Math.max(first, last), total);
  return { first, last };
}

/**
 * scrollTop that brings row `index` into view: unchanged when it is already fully visible,
 * else the row is centred (clamped at 0).
 */
export function scrollToShow(index, scrollTop, viewportH, rowH) {
  const top = index * rowH;
  if (top >= scrollTop && top + rowH <= scrollTop + viewportH) return scrollTop;
  return Math.max(0, Math.round(top + rowH / 2 - viewportH / 2));
}
