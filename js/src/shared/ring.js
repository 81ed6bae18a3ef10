// @ts-check
// Per-row ring buffers of one statistic over refreshes, and the bookkeeping that keeps them in
// step with snapshots and history replies (pure, no DOM).
import { MSG } from "./constants.js";

export const RING_CAPACITY = 100;

/** n rows × capacity float32 values; every row advances together (one shared head). */
export class RingStore {
  constructor(capacity = RING_CAPACITY) {
    this.capacity = capacity;
    this.reset(0);
  }

  reset(nRows) {
    this.n = nRows;
    this.data = new Float32Array(nRows * this.capacity);
    this.length = 0; // values held per row
    this.head = 0; // next slot to write
  }

  /** Append one value per row (array-like of length n; null/undefined -> NaN). */
  append(values) {
    const { n, capacity, data, head } = this;
    for (let i = 0; i < n; i++) {
      const v = values ? values[i] : null;
      data[i * capacity + head] = v === null || v === undefined ? NaN : v;
    }
    this.head = (head + 1) % capacity;
    if (this.length < capacity) this.length += 1;
  }

  /** Replace everything with `flat` (n rows × L values, row-major, oldest first). */
  replace(flat, nRows, L) {
    this.reset(nRows);
    const keep = Math.min(L, this.capacity);
    const skip = L - keep;
    const { capacity, data } = this;
    for (let i = 0; i < nRows; i++) {
      const src = i * L + skip;
      data.set(flat.subarray(src, src + keep), i * capacity);
    }
    this.length = keep;
    this.head = keep % capacity;
  }

  /** Row i's values, oldest first. */
  series(i) {
    if (!(i >= 0 && i < this.n)) return new Float32Array(0);
    const out = new Float32Array(this.length);
    const { capacity, data, length, head } = this;
    const start = (head - length + capacity) % capacity;
    const base = i * capacity;
    for (let k = 0; k < length; k++) out[k] = data[base + ((start + k) % capacity)];
    return out;
  }
}

const same = (a, b) => (a ?? null) === (b ?? null);

/** A binary message buffer as a ``Type`` array (Float32Array, Float64Array...): anywidget hands
 * DataViews; ArrayBuffers and typed arrays work too; null otherwise. Copied only when misaligned. */
export function toTyped(buf, Type) {
  if (!buf) return null;
  if (buf instanceof Type) return buf;
  let bytes;
  if (buf instanceof ArrayBuffer) bytes = new Uint8Array(buf);
  else if (ArrayBuffer.isView(buf)) bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  else return null;
  const size = Type.BYTES_PER_ELEMENT;
  const n = Math.floor(bytes.byteLength / size);
  if (bytes.byteOffset % size === 0) return new Type(bytes.buffer, bytes.byteOffset, n);
  return new Type(bytes.slice(0, n * size).buffer);
}

/** A history buffer as a Float32Array. */
export const toFloat32 = (buf) => toTyped(buf, Float32Array);

/**
 * Sparkline history for one view. `onSnapshot` appends each new refresh and tells the caller to
 * request history when the structure changed; `onHistory` swaps in the server's history and
 * re-appends any refresh newer than the reply.
 */
export class History {
  constructor(stat = "norm", capacity = RING_CAPACITY) {
    this.stat = stat;
    this.ring = new RingStore(capacity);
    this.structure = undefined;
    this.lastRefresh = null;
    this.recent = []; // [{refresh, stats}] of the latest snapshots, newest last
  }

  _rows(snap) {
    return snap && snap.rows && snap.rows.parent ? snap.rows.parent.length : 0;
  }

  /** Feed a snapshot; returns true when history should be (re)requested. */
  onSnapshot(snap) {
    if (!snap || snap.version === undefined) return false;
    let request = false;
    const n = this._rows(snap);
    if (this.lastRefresh === null || !same(snap.structure, this.structure) || n !== this.ring.n) {
      request = true;
      this.structure = snap.structure;
      this.ring.reset(n);
      this.recent = [];
      this.lastRefresh = null;
    }
    const refresh = snap.refresh;
    if (refresh !== undefined && refresh !== null && this.lastRefresh !== null && refresh <= this.lastRefresh) {
      return request; // already have it (e.g. the same snapshot synced again)
    }
    this.lastRefresh = refresh ?? (this.lastRefresh ?? 0) + 1;
    this.recent.push({ refresh: this.lastRefresh, stats: snap.stats });
    if (this.recent.length > 16) this.recent.shift();
    this.ring.append(snap.stats ? snap.stats[this.stat] : null);
    return request;
  }

  /** Another statistic: start over from the latest snapshot (history is re-requested). */
  setStat(stat) {
    if (stat === this.stat) return false;
    this.stat = stat;
    const n = this.ring.n;
    const last = this.recent[this.recent.length - 1];
    this.ring.reset(n);
    if (last) this.ring.append(last.stats ? last.stats[stat] : null);
    return true;
  }

  /**
   * Apply a history reply; returns true when it was used.
   * @param {import("./wire").ToBrowser} msg
   * @param {DataView | ArrayBuffer} [buffer]
   */
  onHistory(msg, buffer) {
    if (!msg || msg.type !== MSG.HISTORY || msg.stat !== this.stat) return false;
    if (!same(msg.structure, this.structure)) return false;
    const rows = msg.rows | 0;
    const L = msg.length | 0;
    const flat = toFloat32(buffer);
    if (rows !== this.ring.n || !flat || flat.length < rows * L) return false;
    this.ring.replace(flat, rows, L);
    const upTo = msg.refresh ?? null;
    for (const r of this.recent) {
      if (upTo !== null && r.refresh > upTo) this.ring.append(r.stats ? r.stats[this.stat] : null);
    }
    if (upTo !== null && (this.lastRefresh === null || upTo > this.lastRefresh)) this.lastRefresh = upTo;
    return true;
  }

  series(i) {
    return this.ring.series(i);
  }
}

/**
 * The snapshot `snap` (rows from the trait) with the statistics of a "stats" message: a float32
 * buffer of `names.length` columns of `rows` values each (NaN: none), and `exact` values for the
 * few numbers float32 cannot carry. Null when the message does not fit the snapshot's rows.
 */
export function withStats(snap, msg, buffer) {
  if (!snap || snap.version === undefined || !msg || !Array.isArray(msg.names)) return null;
  const R = snap.rows && snap.rows.parent ? snap.rows.parent.length : 0;
  if ((msg.rows | 0) !== R || !same(msg.structure, snap.structure)) return null;
  const flat = toFloat32(buffer);
  if (!flat || flat.length < R * msg.names.length) return null;
  const stats = {};
  msg.names.forEach((name, j) => {
    const column = new Array(R);
    for (let r = 0; r < R; r++) {
      const v = flat[j * R + r];
      column[r] = Number.isNaN(v) ? null : v;
    }
    stats[name] = column;
  });
  for (const [row, values] of Object.entries(msg.exact || {})) {
    const r = Number(row);
    if (r >= 0 && r < R)
      msg.names.forEach((name, j) => {
        stats[name][r] = values[j] ?? null;
      });
  }
  return { ...snap, stats, refresh: msg.refresh };
}
