// @ts-check
// Pure text formatting: numbers, bytes, shapes and Python-style paths. No DOM.

// The number and byte rules are nnx_lab.core.render's (format_number, format_bytes); the tests
// compare these functions with Python's output on a corpus of values (test/generated/format.json).
import { BYTE_UNITS, DIGITS, PY_KEYWORDS } from "./constants.js";

/** Trailing zeros of a decimal mantissa: "1.500" -> "1.5", "2.000" -> "2". */
function trimZeros(s) {
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

/**
 * A statistic to DIGITS (4) significant digits, trailing zeros dropped: "0.264", "1235",
 * "1.235e+4", "-3.5e-5". Rounded half away from zero on the exact value (toExponential's rule);
 * plain notation when the rounded value's decimal exponent is in -3..3. null/undefined -> "".
 */
export function fmtNum(x) {
  if (x === null || x === undefined || x === "") return "";
  if (typeof x !== "number") x = Number(x);
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return "0";
  const sign = x < 0 ? "-" : "";
  const [m, exp] = Math.abs(x)
    .toExponential(DIGITS - 1)
    .split("e");
  const e = Number(exp);
  if (e >= -3 && e < DIGITS) {
    // The rounded digits, placed: exact, no second rounding.
    const digits = m.replace(".", "");
    const text =
      e >= 0 ? `${digits.slice(0, e + 1)}.${digits.slice(e + 1) || "0"}` : `0.${"0".repeat(-e - 1)}${digits}`;
    return sign + trimZeros(text);
  }
  return `${sign}${trimZeros(m)}e${e >= 0 ? "+" : "-"}${Math.abs(e)}`;
}

/** An integer count: "0", "12", "" for null. */
export function fmtCount(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "";
  return String(Math.round(n));
}

/** A step number with thousands separators, as Python's f"{n:,}": "1,234"; "" for null. */
export function fmtStep(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return "";
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/**
 * Bytes in binary units, one decimal above 1023 B, the unit chosen after rounding: "512 B",
 * "1.0 KiB", "288.7 MiB"; ties away from zero (toFixed's rule); "" for null.
 */
export function fmtBytes(n) {
  if (n === null || n === undefined || typeof n !== "number" || !Number.isFinite(n)) return "";
  if (n < 0) return "-" + fmtBytes(-n);
  if (n < 1024) return `${Math.round(n)} B`;
  let v = n;
  for (let u = 1; u < BYTE_UNITS.length; u++) {
    v /= 1024; // exact: a power of two
    const t = v.toFixed(1);
    if (Number(t) < 1024 || u === BYTE_UNITS.length - 1) return `${t} ${BYTE_UNITS[u]}`;
  }
  return "";
}

/** A shape as a Python tuple: "()", "(3,)", "(512, 8, 64)"; "" for null. */
export function fmtShape(shape) {
  if (!Array.isArray(shape)) return "";
  if (shape.length === 1) return `(${shape[0]},)`;
  return `(${shape.join(", ")})`;
}

/** Elements in a shape (1 for a scalar), or null. */
export function shapeSize(shape) {
  if (!Array.isArray(shape)) return null;
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** NaN/Inf counts as "2 NaN, 1 Inf"; "" when both are 0 or null. */
export function fmtNonfinite(nan, inf) {
  const parts = [];
  if (nan) parts.push(`${fmtCount(nan)} NaN`);
  if (inf) parts.push(`${fmtCount(inf)} Inf`);
  return parts.join(", ");
}

/** Local wall-clock time HH:MM:SS of an epoch-seconds timestamp; "" for null. */
export function fmtClock(epochSeconds) {
  if (epochSeconds === null || epochSeconds === undefined) return "";
  const d = new Date(epochSeconds * 1000);
  const p = (k) => String(k).padStart(2, "0");
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Milliseconds: "3.2 ms", "41 ms", "1.25 s"; "" for null. */
export function fmtMs(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "";
  if (ms >= 1000) return `${trimZeros((ms / 1000).toPrecision(3))} s`;
  if (ms >= 10) return `${Math.round(ms)} ms`;
  return `${trimZeros(ms.toPrecision(2))} ms`;
}

// --- Python-style paths -------------------------------------------------------------------

const KEYWORDS = new Set(PY_KEYWORDS);

// str.isidentifier(), close enough: XID_Start/XID_Continue approximated with Unicode classes.
const IDENT = /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u;

export function isIdentifier(s) {
  return typeof s === "string" && IDENT.test(s) && !KEYWORDS.has(s);
}

// What Python's repr() escapes: characters str.isprintable() refuses (control, format,
// surrogate, private-use, unassigned, and separators other than the space).
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

/**
 * repr() of a Python str: single quotes unless the text has a ' and no ", backslash and the
 * quote escaped, \n \t \r, and other unprintable characters as \xNN, \uNNNN or \UNNNNNNNN.
 */
export function pyRepr(s) {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = "";
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === "\\") out += "\\\\";
    else if (ch === q) out += "\\" + q;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch !== " " && UNPRINTABLE.test(ch)) {
      const hex = c.toString(16);
      out +=
        c < 0x100
          ? "\\x" + hex.padStart(2, "0")
          : c < 0x10000
            ? "\\u" + hex.padStart(4, "0")
            : "\\U" + hex.padStart(8, "0");
    } else out += ch;
  }
  return q + out + q;
}

/** One path key as it follows its parent: ".name", "[0]" or "['key']" (".": not first). */
export function keyText(key, first) {
  if (typeof key === "number") return `[${key}]`;
  const s = String(key);
  if (isIdentifier(s)) return first ? s : `.${s}`;
  return `[${pyRepr(s)}]`;
}

/** Keys root-first as Python attribute/index access: blocks[0].attn.query.kernel */
export function pathText(keys) {
  let out = "";
  for (let i = 0; i < keys.length; i++) out += keyText(keys[i], i === 0);
  return out;
}
