// @ts-check
// Whether a viewer's kernel side is still there, said in its status line: the front end knows what
// Python cannot say once its kernel is gone.
//
// - A restart, a dead or shut-down kernel: the widget manager's kernel says so. JupyterLab 4
//   (ipywidgets 8): `widget_manager.kernel.statusChanged` ("restarting", "autorestarting", "dead", and
//   "starting": a new kernel process, which is all a restart through the REST API shows, and which
//   the server may drop while its IOPub socket reconnects to the new process). So also: the kernel
//   process that signs IOPub status messages (`header.session`, a new id in every process) changed:
//   the status around any request the new kernel answers, even one it ignores, says so (status only:
//   the server signs its own "IOPub data rate exceeded" stream messages);
//   Notebook 6.5 (ipywidgets 7): `widget_manager.notebook.events` ("kernel_restarting.Kernel"...).
//   Both managers also mark the model's comm not live ("comm_live_update"), and Notebook 6.5 its
//   views' elements `jupyter-widgets-disconnected` (anywidget's model proxy has no `comm_live` to read).
// - A page drawn from saved widget state (an exported notebook, html-manager: no kernel, no notebook;
//   its views are marked disconnected from the start): "a saved copy", never "the kernel restarted".
// - Anywhere else (Colab, VS Code): a "refresh now" whose answer
//   does not come within ANSWER_MS says so (busy, or restarted), until an answer comes.
//   marimo: its model's `widget_manager` has only `get_model` (no kernel, no notebook), so nothing
//   above is watched and the view never says "disconnected"; marimo reads a widget's messages between
//   cells, so a click while a cell runs is answered when the cell ends (tests/browser/test_marimo_browser.py).
// A restart is never undone for this view: the new kernel has no widget behind it.

/** How long a "refresh now" waits for the kernel's answer before saying there is none. */
export const ANSWER_MS = 10000;

/** What the status line says for each (the state, its message, whether the buttons that ask the kernel stop). */
export const LOST = {
  restarted: { state: "disconnected", message: "the kernel restarted; run the cell again", stop: true },
  stopped: { state: "disconnected", message: "the kernel stopped; start one and run the cell again", stop: true },
  saved: {
    state: "saved",
    message: "a saved copy: no kernel is behind this page; run the notebook to see it live",
    stop: true,
  },
  silent: {
    state: "no answer",
    message: `no answer from the kernel after ${ANSWER_MS / 1000} s: it is busy, or it restarted (then run the cell again)`,
    stop: false,
  },
};

const DISCONNECTED = "jupyter-widgets-disconnected";
const CLASSIC_RESTART = "kernel_restarting.Kernel";
const CLASSIC_STOP = "kernel_dead.Kernel kernel_killed.Kernel kernel_killed.Session";

/** Calls `onChange()` once the kernel behind `model` is gone; `lost()`: null, LOST.restarted or LOST.stopped. */
export function watchConnection(model, el, onChange) {
  let lost = null;
  const set = (what) => {
    if (lost) return; // the first news stands: a restarted kernel that is idle again has no widget
    lost = what;
    onChange();
  };
  const wm = model.widget_manager;
  // No kernel and no notebook behind the manager, and the view marked disconnected: a page drawn from
  // saved widget state (an exported notebook through @jupyter-widgets/html-manager), not a restart.
  const kernelless = !(wm && (wm.kernel || wm.notebook));
  const check = () => {
    if (el && el.closest && el.closest(`.${DISCONNECTED}`)) set(kernelless ? LOST.saved : LOST.restarted);
  };
  const stops = [];
  // The view's own listener (which sets the class) may run after this one: read it once they all ran.
  const onLive = () => setTimeout(check, 0);
  model.on("comm_live_update", onLive);
  stops.push(() => model.off("comm_live_update", onLive));
  const signal = wm && wm.kernel && wm.kernel.statusChanged;
  if (signal && typeof signal.connect === "function") {
    const onStatus = (_, status) => {
      // "starting": a new kernel process said hello (a restart through the REST API: no "restarting" first)
      if (status === "restarting" || status === "autorestarting" || status === "starting") set(LOST.restarted);
      else if (status === "dead") set(LOST.stopped);
    };
    signal.connect(onStatus);
    stops.push(() => signal.disconnect(onStatus));
  }
  const iopub = wm && wm.kernel && wm.kernel.iopubMessage;
  if (iopub && typeof iopub.connect === "function") {
    let session = null; // the kernel process this view first heard from
    const onIopub = (_, msg) => {
      const s = msg && msg.header && msg.header.msg_type === "status" && msg.header.session;
      if (!s) return;
      if (session === null) session = s;
      else if (s !== session) set(LOST.restarted);
    };
    iopub.connect(onIopub);
    stops.push(() => iopub.disconnect(onIopub));
  }
  const events = wm && wm.notebook && wm.notebook.events;
  if (events && typeof events.on === "function") {
    const onRestart = () => set(LOST.restarted);
    const onStop = () => set(LOST.stopped);
    events.on(CLASSIC_RESTART, onRestart);
    events.on(CLASSIC_STOP, onStop);
    stops.push(() => {
      events.off(CLASSIC_RESTART, onRestart);
      events.off(CLASSIC_STOP, onStop);
    });
  }
  return { lost: () => lost, check, stop: () => stops.forEach((f) => f()) };
}

/** Requests whose answer (an "ack" with their id) is awaited: `sent(id)` starts the wait, `answered(id)` ends it. */
export function createAnswerWait(onChange, ms = ANSWER_MS) {
  const waiting = new Map(); // id -> timer
  let silent = false;
  const set = (v) => {
    if (v === silent) return;
    silent = v;
    onChange();
  };
  return {
    silent: () => silent,
    sent(id) {
      waiting.set(
        id,
        setTimeout(() => {
          waiting.delete(id);
          set(true);
        }, ms),
      );
    },
    /** Whether `id` was awaited; any answer shows the kernel is there. */
    answered(id) {
      const timer = waiting.get(id);
      if (timer !== undefined) {
        clearTimeout(timer);
        waiting.delete(id);
      }
      set(false);
      return timer !== undefined;
    },
    stop() {
      for (const t of waiting.values()) clearTimeout(t);
      waiting.clear();
    },
  };
}
