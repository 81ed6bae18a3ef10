// @ts-check
// Requests a panel sent to the kernel and is waiting on: each shows "pending" until the kernel
// answers (an ack message, or new state naming the last message it applied). Shared by the view
// panel and the capture panel. The kernel's side is nnx_lab/widgets/requests.py; the messages are
// wire.d.ts's (generated from nnx_lab/widgets/wire.py). Not anywidget's experimental invoke: it
// takes one answer and rejects after 3 s, so a click made while a cell runs could not stay
// pending or say "queued" (requests.py's docstring has the probe).

/** @typedef {import("./wire").ToPython} ToPython */
/** @typedef {import("./wire").Ack} Ack */
/**
 * A request the kernel has not answered with done/error.
 * @typedef {object} OpenRequest
 * @property {number} id
 * @property {ToPython["type"]} type
 * @property {string} control what shows "pending…" (e.g. "mode:eval", "view", "apply")
 * @property {ToPython & {id: number}} msg the message as sent
 * @property {"pending" | Ack["state"]} state
 * @property {string} text
 * @property {string} [code]
 */

/** @type {(x: unknown, dflt?: string) => string} */
const str = (x, dflt = "") => (x === null || x === undefined ? dflt : String(x));
/** @type {(x: unknown) => Record<string, any>} */
const obj = (x) => (x && typeof x === "object" && !Array.isArray(x) ? x : {});

// Ids are increasing integers, unique in the page: one counter for every panel on it, from a
// random start, so two panels of one widget (the same model shown twice) never share an id.
let nextId = 1 + Math.floor(Math.random() * 2 ** 30);

/** The requests a panel sent that the kernel has not answered with done/error. */
export class Requests {
  constructor() {
    /** @type {Map<number, OpenRequest>} */
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
   * panel did not send (another panel's, or a repeat). Anything else is read as a wrong ack.
   * @param {Ack | unknown} msg
   * @returns {OpenRequest | null}
   */
  ack(msg) {
    const m = obj(msg);
    const req = this.open.get(m.id);
    if (!req) return null;
    /** @type {Ack["state"]} */
    const state = ["queued", "done", "error"].includes(m.state) ? m.state : "error";
    req.state = state;
    req.text = str(m.text);
    req.code = str(m.code);
    if (state !== "queued") this.open.delete(m.id);
    return req;
  }

  /**
   * The open requests from `control` (newest last).
   * @param {string} control
   * @returns {OpenRequest[]}
   */
  of(control) {
    return [...this.open.values()].filter((r) => r.control === control);
  }

  /**
   * Close every open request with an id up to `answered`: for a panel whose kernel answers by
   * re-sending its state, naming the last message it applied (the kernel applies them in order,
   * and ids only grow). Returns how many closed.
   * @param {unknown} answered the id of the last message the kernel applied
   * @returns {number}
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

  /** @returns {number} */
  get size() {
    return this.open.size;
  }
}
