// @ts-check
// The view panel's requests to the kernel: each sent message shows "pending…" on its button and in
// the status line until the kernel acks its id (queued while a cell runs, then done or error).

import { h, setFlag, setText } from "../shared/dom.js";
import { fmtCount } from "../shared/format.js";
import { Requests } from "../shared/requests.js";
import { MSG } from "../shared/constants.js";

const QUEUED = "pending \u2014 applies at the next step";
const PENDING = "pending\u2026";

function markPending(btn, reqs) {
  const span = btn.querySelector("span.nnx-views-pending");
  const n = reqs.length;
  const queued = reqs.some((r) => r.state === "queued");
  setText(span, n ? `${PENDING}${n > 1 ? ` (${n})` : ""}` : "");
  setFlag(btn, "aria-busy", n > 0);
  if (n) btn.setAttribute("data-state", queued ? "queued" : "pending");
  else btn.removeAttribute("data-state");
}

/**
 * Requests of the panel over its state `st` ({prep, ran, doneMode}); `buttons` are the
 * train/eval/create/apply buttons; `onAnswered(req)` runs after each ack it applied.
 */
export function createRequests(doc, model, st, buttons, onAnswered) {
  const requests = new Requests();
  const status = h(doc, "div", { class: "nnx-views-status", role: "status", "aria-live": "polite" });

  function describe(req) {
    const m = req.msg;
    if (req.type === MSG.MODE) return `${st.prep.target}.${m.mode}()`;
    if (req.type === MSG.VIEW) return `create view ${m.name}`;
    return "apply in place";
  }

  function setStatus(state, text) {
    const others = requests.size;
    const tail = (state === "done" || state === "error") && others ? ` \u00B7 ${fmtCount(others)} more pending` : "";
    status.setAttribute("data-state", state);
    setText(status, text + tail);
  }

  /** The switch shows the newest mode click still waiting, else the model's mode; buttons their requests. */
  function fillSwitch() {
    let want = st.doneMode || st.prep.mode;
    for (const r of requests.open.values()) if (r.msg.type === MSG.MODE) want = r.msg.mode; // the newest last
    buttons.train.setAttribute("aria-pressed", want === "train" ? "true" : "false");
    buttons.eval.setAttribute("aria-pressed", want === "eval" ? "true" : "false");
    markPending(buttons.train, requests.of("mode:train"));
    markPending(buttons.eval, requests.of("mode:eval"));
    markPending(buttons.create, requests.of("view"));
    markPending(buttons.apply, requests.of("apply"));
  }

  /**
   * Send `msg` from `control`, shown as pending until its ack.
   * @param {import("../shared/wire").ToPython} msg
   * @param {string} control
   */
  function send(msg, control) {
    const full = requests.start(msg, control);
    model.send(full);
    const req = requests.open.get(full.id);
    status.setAttribute(
      "title",
      "sent; a kernel busy with a cell reads it when the cell ends, or at the next tick()/track() step",
    );
    setStatus("pending", `${describe(req)}: ${PENDING} ${model.get("busy_note") || "waiting for the kernel"}`); // busy_note: no subshells
    fillSwitch();
    return full;
  }

  /** @param {import("../shared/wire").ToBrowser} msg */
  function onAck(msg) {
    if (!msg || msg.type !== MSG.ACK) return;
    const req = requests.ack(msg);
    if (!req) return;
    const what = describe(req);
    status.setAttribute("title", req.text);
    if (req.state === "queued") {
      setStatus("queued", `${what}: ${QUEUED}`);
    } else if (req.state === "done") {
      if (req.code) st.ran[req.type] = req.code;
      if (req.msg.type === MSG.MODE) st.doneMode = req.msg.mode; // until the payload that shows it arrives
      setStatus("done", req.text || `${what}: done`);
    } else {
      setStatus("error", req.text || `${what} failed`);
    }
    fillSwitch();
    onAnswered(req);
  }

  return { status, send, onAck, fillSwitch };
}
