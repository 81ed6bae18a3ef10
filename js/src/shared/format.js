// Pure text formatting: numbers, bytes, shapes and Python-style paths. No DOM.

/** Trailing zeros of a decimal mantissa: "1.500" -> "1.5", "2.000" -> "2". */
function trimZeros(s) {
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

function expForm(x, digits) {
  const [m, e] = x.toExponential(digits - 1).split("e");
  return `${trimZeros(m)}e${e}`;
}

/**
 * A statistic to 4 significant digits: "0.264", "1.665", "-3.5e-5", "1.235e+6".
 * Exponent form for |x| < 1e-3 or |x| >= 1e5; null/undefined -> "".
 */
export function fmtNum(x, digits = 4) {
  if (x === null || x === undefined || x === "") return "";
  if (typeof x !== "number") x = Number(x);
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a < 1e-3 || a >= 1e5) return expForm(x, digits);
  const p = x.toPrecision(digits);
  return p.includes("e") ? expForm(x, digits) : trimZeros(p);
}

/** An integer count: "0", "12", "" for null. */
export function fmtCount(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "";
  return String(Math.round(n));
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** Bytes, binary units: "512 B", "1.5 KiB", "12.3 MiB", "1 GiB"; "" for null. */
export function fmtBytes(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "";
  let v = Math.abs(n);
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u += 1;
  }
  const sign = n < 0 ? "-" : "";
  if (u === 0) return `${sign}${Math.round(v)} B`;
  const t = v >= 999.5 ? v.toFixed(0) : trimZeros(v.toPrecision(3));
  return `${sign}${t} ${UNITS[u]}`;
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

const PY_KEYWORDS = new Set(
  ("False None True and as assert async await break class continue def del elif else except " +
    "finally for from global if import in is lambda nonlocal not or pass raise return try while " +
    "with yield").split(" "),
);

// str.isidentifier(), close enough: XID_Start/XID_Continue approximated with Unicode classes.
const IDENT = /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u;

export function isIdentifier(s) {
  return typeof s === "string" && IDENT.test(s) && !PY_KEYWORDS.has(s);
}

/**
 * repr() of a Python str: single quotes unless the text has a ' and no ", backslash and the
 * quote escaped, control characters as \n, \t, \r or \xNN.
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
    else if (c < 0x20 || (c >= 0x7f && c < 0xa0)) out += "\\x" + c.toString(16).padStart(2, "0");
    else out += ch;
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
