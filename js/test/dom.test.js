import test from "node:test";
import assert from "node:assert/strict";
import { h, s, text, setText, patch } from "../src/shared/dom.js";
import { fillBanner, fillChips, fillStatus, fillTitle, fillDevices, firstNonfinite } from "../src/viewer/panels.js";
import { buildTree } from "../src/shared/tree.js";
import { FakeDocument } from "./fakedom.js";
import { sequential, tricky } from "./fixtures.js";

const EVIL = "<img src=x onerror=alert(1)>";

test("text() makes a text node holding the string verbatim", () => {
  const doc = new FakeDocument();
  const t = text(doc, EVIL);
  assert.equal(t.nodeType, 3);
  assert.equal(t.data, EVIL);
  assert.deepEqual(doc.calls, [["createTextNode", EVIL]]);
  assert.equal(text(doc, null).data, "");
});

test("h(): string children become text nodes, props become attributes", () => {
  const doc = new FakeDocument();
  const el = h(doc, "td", { class: "c-path", title: EVIL, "data-path": EVIL }, EVIL, h(doc, "b", null, "x"));
  assert.equal(el.childNodes[0].nodeType, 3);
  assert.equal(el.childNodes[0].data, EVIL);
  assert.equal(el.getAttribute("title"), EVIL);
  assert.equal(el.dataset.path, EVIL);
  assert.equal(el.textContent, EVIL + "x");
  assert.ok(doc.calls.some((c) => c[0] === "createTextNode" && c[1] === EVIL));
  assert.ok(!doc.calls.some((c) => c[0] === "createElement" && c[1] === "img"));
});

test("h(): text prop and setText go through textContent", () => {
  const doc = new FakeDocument();
  const el = h(doc, "span", { text: EVIL });
  assert.deepEqual(doc.calls.at(-1), ["textContent", EVIL]);
  setText(el, `${EVIL}!`);
  assert.equal(el.textContent, `${EVIL}!`);
  assert.equal(el.children.length, 0);
});

test("s() creates SVG elements in the SVG namespace", () => {
  const doc = new FakeDocument();
  const el = s(doc, "path", { d: "M0 0L1 1" });
  assert.equal(el.namespaceURI, "http://www.w3.org/2000/svg");
  assert.equal(el.getAttribute("d"), "M0 0L1 1");
});

test("panels keep user strings as text", () => {
  const doc = new FakeDocument();
  const snap = tricky();
  snap.root_type = EVIL;
  snap.totals = { [EVIL]: { count: 1, size: 1, bytes: 4 }, all: { count: 1, size: 1, bytes: 4 } };
  snap.devices = {
    platform: EVIL,
    device_kind: EVIL,
    count: 1,
    devices: [{ id: 0, platform: EVIL, kind: EVIL, bytes_in_use: 10, peak_bytes_in_use: 20, bytes_limit: 100 }],
  };
  const title = h(doc, "div");
  fillTitle(doc, title, snap);
  assert.ok(title.textContent.startsWith(EVIL));
  const chips = h(doc, "div");
  fillChips(doc, chips, snap, EVIL);
  assert.equal(chips.children.length, 1);
  assert.equal(chips.children[0].getAttribute("data-type"), EVIL);
  assert.equal(chips.children[0].getAttribute("aria-pressed"), "true");
  assert.ok(chips.textContent.includes(EVIL));
  const dev = h(doc, "div");
  fillDevices(doc, dev, snap.devices);
  assert.ok(dev.textContent.includes(`${EVIL} \u00D7 1`));
  assert.ok(dev.textContent.includes("10 B / peak 20 B / of 100 B"));
  assert.ok(!doc.calls.some((c) => c[0] === "createElement" && c[1] === "img"));
});

test("banner names the first NaN/Inf row, in row order", () => {
  const doc = new FakeDocument();
  const snap = tricky();
  assert.deepEqual(firstNonfinite(snap), { row: 2, nan: 2, inf: 1, count: 2 });
  const el = h(doc, "div", { hidden: true });
  fillBanner(doc, el, snap, buildTree(snap));
  assert.equal(el.hidden, false);
  assert.equal(el.textContent, "\u26A0NaN/Inf in blocks[1].w: 2 NaN, 1 Inf (+1 more variable)");
  const clean = sequential();
  fillBanner(doc, el, clean, buildTree(clean));
  assert.equal(el.hidden, true);
  assert.equal(firstNonfinite(clean), null);
});

test("status line: gone and error show their message", () => {
  const doc = new FakeDocument();
  const slots = { state: h(doc, "span"), msg: h(doc, "span"), info: h(doc, "span"), button: h(doc, "button") };
  const line = h(doc, "div");
  fillStatus(doc, line, slots, {
    state: "gone",
    message: "",
    last_refresh: null,
    cost_ms: null,
    refreshes: 3,
    interval_s: 1,
  });
  assert.equal(line.getAttribute("data-state"), "gone");
  assert.equal(slots.msg.textContent, "model is gone (garbage-collected)");
  assert.equal(slots.button.disabled, true);
  fillStatus(doc, line, slots, {
    state: "error",
    message: EVIL,
    last_refresh: 1700000000,
    cost_ms: 3.21,
    refreshes: 1,
    interval_s: 1,
  });
  assert.equal(slots.msg.textContent, EVIL);
  assert.match(slots.info.textContent, /^last refresh \d\d:\d\d:\d\d · refresh cost 3.2 ms · 1 refresh$/);
  fillStatus(doc, line, slots, {
    state: "live",
    message: "",
    last_refresh: null,
    cost_ms: 4,
    device_ms: 12.5,
    refreshes: 2,
    interval_s: 0.8,
  });
  assert.equal(slots.info.textContent, "refresh cost 4 ms host + 13 ms device · 2 refreshes · every 800 ms");
  fillStatus(doc, line, slots, {
    state: "live",
    message: "",
    last_refresh: null,
    cost_ms: null,
    refreshes: 0,
    interval_s: 0.5,
  });
  assert.equal(slots.msg.hidden, true);
  assert.equal(slots.info.textContent, "0 refreshes · every 500 ms");
});

test("patch() updates in place, keeping unchanged elements", () => {
  const doc = new FakeDocument();
  const make = (a, b, cls, extra) =>
    h(
      doc,
      "tr",
      { class: cls, "data-path": "x" },
      h(doc, "td", { class: "c-path" }, h(doc, "span", { class: "tog" }, a), "key"),
      h(doc, "td", { class: "c-mean", title: b }, b),
      ...(extra ? [h(doc, "td", null, extra)] : []),
    );
  const old = make("\u25B8", "1", "nnx-module");
  const tog = old.childNodes[0].childNodes[0];
  const mean = old.childNodes[1];
  patch(old, make("\u25BE", "2", "nnx-module nnx-flash"));
  assert.equal(old.getAttribute("class"), "nnx-module nnx-flash");
  assert.equal(old.childNodes[0].childNodes[0], tog); // same span, new text
  assert.equal(tog.textContent, "\u25BE");
  assert.equal(old.childNodes[1], mean);
  assert.equal(mean.textContent, "2");
  assert.equal(mean.getAttribute("title"), "2");
  patch(old, make("\u25BE", "2", "nnx-module", EVIL)); // a different shape: children replaced
  assert.equal(old.childNodes.length, 3);
  assert.equal(old.childNodes[2].textContent, EVIL);
  const fresh = h(doc, "tr", null, h(doc, "td", null, "only"));
  patch(old, fresh);
  assert.equal(old.getAttribute("class"), null);
  assert.equal(old.textContent, "only");
});
