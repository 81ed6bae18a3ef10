// @ts-check
// Requests a panel sent to the kernel and is waiting on: each shows "pending" until the kernel
// answers (an ack message, or new state naming the last message it applied). Shared by the view
// panel and the capture panel.

const str = (x, dflt = "") => (x === null || x === undefined ? dflt : String(x));
const obj = (x) => (x && typeof x === "object" && !Array.isArray(x) ? x : {});

// Ids are increasing integers, unique in the page: one counter for every panel on it, from a
// random start, so two panels of one widget (the same model shown twice) never share an id.
let nextId = 1 + Math.floor(Math.random() * 2 ** 30);

/**
 * The requests a panel sent that the kernel has not answered with done/error. Each is
 * {id, type, control, msg, state: "pending" | "queued", text}; `control` names what shows
 * "pending…" (e.g. "mode:eval", "view", "apply").
 */
export class Requests {
  constructor() {
    this.open = new Map();
  }

  /**
   * Record `msg` (a {type, ...} message) as sent from `control`; returns it with its id.
   * @template {import("./wire").ToPython} M
   * @param {M} msg
   * @param {string} control
   * @returns {M & {id: number}}
   */
  start(msg, control) {
    const id = nextId++;
    const full = { ...msg, id };
    this.open.set(id, { id, type: msg.type, control, msg: full, state: "pending", text: "" });
    return full;
  }

  /**
   * Apply an ack {id, state, text, code}. Returns the request it answers (with `state` and
   * `text` updated and `code` added; done/error ones are no longer open), or null for an id this
   * panel did not send (another panel's, or a repeat).
   */
  ack(msg) {
    const m = obj(msg);
    const req = this.open.get(m.id);
    if (!req) return null;
    const state = ["queued", "done", "error"].includes(m.state) ? m.state : "error";
    req.state = state;
    req.text = str(m.text);
    req.code = str(m.code);
    if (state !== "queued") this.open.delete(m.id);
    return req;
  }

  /** The open requests from `control` (newest last). */
  of(control) {
    return [...this.open.values()].filter((r) => r.control === control);
  }

  /**
   * Close every open request with an id up to `answered`: for a panel whose kernel answers by
   * re-sending its state, naming the last message it applied (the kernel applies them in order,
   * and ids only grow). Returns how many closed.
   */
  settle(answered) {
    if (typeof answered !== "number") return 0;
    let n = 0;
    for (const id of [...this.open.keys()]) {
      if (id <= answered) {
        this.open.delete(id);
        n += 1;
      }
    }
    return n;
  }

  get size() {
    return this.open.size;
  }
}
