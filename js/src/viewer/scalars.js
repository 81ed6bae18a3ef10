// @ts-check
// The header's scalar curves: one small sparkline per name logged with viewer.tick(loss=...) or
// viewer.log(...), with its last value and step. The data is Python's "scalars" message (names and
// point counts; two float64 buffers: the steps, the values, names one after the other), sent
// after display and whenever a refresh read new values; each message replaces the last.

import { h, s } from "../shared/dom.js";
import { fmtNum, fmtStep } from "../shared/format.js";
import { toTyped } from "../shared/ring.js";
import { sparkPath } from "../shared/sparkline.js";
import { MSG } from "../shared/constants.js";

export const CURVE_W = 120;
export const CURVE_H = 18;
const PAD = 1.5;

/** A buffer as a Float64Array (see shared/ring.js toTyped); null otherwise. */
export const toFloat64 = (buf) => toTyped(buf, Float64Array);

/**
 * The curves of a "scalars" message: [{name, steps, values}] (Float64Arrays, oldest first), or
 * null when the message and its buffers do not agree (then the last curves stay).
 * @param {import("../shared/wire").ToBrowser} msg
 * @param {DataView[]} buffers
 */
export function parseScalars(msg, buffers) {
  if (!msg || msg.type !== MSG.SCALARS || !Array.isArray(msg.names) || !Array.isArray(msg.counts)) return null;
  if (msg.names.length !== msg.counts.length || !buffers || buffers.length < 2) return null;
  const steps = toFloat64(buffers[0]);
  const values = toFloat64(buffers[1]);
  const total = msg.counts.reduce((a, c) => a + (Number.isInteger(c) && c >= 0 ? c : NaN), 0);
  if (!steps || !values || !(steps.length === total && values.length === total)) return null;
  const curves = [];
  let at = 0;
  msg.names.forEach((name, i) => {
    const n = msg.counts[i];
    curves.push({ name: String(name), steps: steps.subarray(at, at + n), values: values.subarray(at, at + n) });
    at += n;
  });
  return curves;
}

/** x of point i of n in the curve box (sparkPath's spacing). */
function xOf(i, n) {
  return n === 1 ? CURVE_W / 2 : PAD + (i * (CURVE_W - 2 * PAD)) / (n - 1);
}

/** One curve: name, sparkline (NaN/Inf points marked), last value and its step; text nodes only. */
function curveItem(doc, { name, steps, values }) {
  const n = values.length;
  const last = n ? values[n - 1] : NaN;
  const lastStep = n ? steps[n - 1] : null;
  const marks = [];
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(values[i])) {
      const x = Math.round(xOf(i, n) * 10) / 10;
      marks.push(s(doc, "line", { class: "bad", x1: x, x2: x, y1: 0, y2: CURVE_H }));
    }
  }
  const svg = s(
    doc,
    "svg",
    {
      class: "nnx-scalar-spark",
      width: CURVE_W,
      height: CURVE_H,
      viewBox: `0 0 ${CURVE_W} ${CURVE_H}`,
      "aria-hidden": "true",
    },
    s(doc, "path", { d: sparkPath(values, CURVE_W, CURVE_H, PAD) }),
    ...marks,
  );
  const span = n
    ? `steps ${fmtStep(steps[0])}\u2013${fmtStep(lastStep)}, ${n} point${n === 1 ? "" : "s"}`
    : "no values";
  return h(
    doc,
    "div",
    { class: "nnx-scalar", "data-name": name, title: `${name}: ${span}` },
    h(doc, "span", { class: "nnx-scalar-name" }, name),
    svg,
    h(doc, "span", { class: Number.isFinite(last) ? "nnx-scalar-value" : "nnx-scalar-value bad" }, fmtNum(last)),
    h(doc, "span", { class: "nnx-scalar-step" }, lastStep === null ? "" : `step ${fmtStep(lastStep)}`),
  );
}

/** Draw `curves` (parseScalars' output) into `el`; hidden when there are none. */
export function fillScalars(doc, el, curves) {
  const list = curves || [];
  el.hidden = list.length === 0;
  el.replaceChildren(...list.map((c) => curveItem(doc, c)));
}
