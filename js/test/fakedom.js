// A tiny fake DOM for node tests: enough of Document/Element for the viewer, and it throws if
// anything tries to parse HTML (innerHTML, outerHTML, insertAdjacentHTML).

class Node {
  constructor(doc) {
    this.ownerDocument = doc;
    this.parentNode = null;
    this.childNodes = [];
  }
  get textContent() {
    return this.childNodes.map((c) => c.textContent).join("");
  }
  set textContent(v) {
    this.doc.calls.push(["textContent", String(v)]);
    for (const c of this.childNodes) c.parentNode = null;
    this.childNodes = v === "" ? [] : [new TextNode(this.doc, String(v))];
  }
  get doc() {
    return this.ownerDocument;
  }
}

export class TextNode extends Node {
  constructor(doc, data) {
    super(doc);
    this.data = data;
    this.nodeType = 3;
  }
  get textContent() {
    return this.data;
  }
  set textContent(v) {
    this.data = String(v);
  }
}

function html() {
  throw new Error("HTML parsing is not allowed");
}

export class Element extends Node {
  constructor(doc, tag, ns = null) {
    super(doc);
    this.tagName = tag.toUpperCase();
    this.namespaceURI = ns;
    this.nodeType = 1;
    this.attributes = new Map();
    this.listeners = {};
    this.dataset = {};
    const el = this;
    this.style = new Proxy(
      {},
      {
        set(t, k, v) {
          t[k] = v;
          return true;
        },
        get(t, k) {
          if (k === "setProperty")
            return (n, v) => {
              t[n] = v;
            };
          return t[k] ?? "";
        },
      },
    );
    this.classList = {
      add: (...c) => el.setAttribute("class", [...new Set([...el.classes(), ...c])].join(" ")),
      remove: (...c) =>
        el.setAttribute(
          "class",
          el
            .classes()
            .filter((x) => !c.includes(x))
            .join(" "),
        ),
      contains: (c) => el.classes().includes(c),
      toggle: (c, force) => {
        const on = force === undefined ? !el.classes().includes(c) : Boolean(force);
        if (on) el.classList.add(c);
        else el.classList.remove(c);
        return on;
      },
    };
    this.scrollTop = 0;
    this.value = "";
  }
  classes() {
    return (this.getAttribute("class") || "").split(/\s+/).filter(Boolean);
  }
  set innerHTML(v) {
    html();
  }
  get innerHTML() {
    return html();
  }
  set outerHTML(v) {
    html();
  }
  insertAdjacentHTML() {
    html();
  }
  setAttribute(k, v) {
    this.attributes.set(k, String(v));
    if (k.startsWith("data-")) this.dataset[k.slice(5).replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = String(v);
  }
  getAttributeNames() {
    return [...this.attributes.keys()];
  }
  getAttribute(k) {
    return this.attributes.has(k) ? this.attributes.get(k) : null;
  }
  removeAttribute(k) {
    this.attributes.delete(k);
  }
  get hidden() {
    return this.attributes.has("hidden");
  }
  set hidden(v) {
    if (v) this.setAttribute("hidden", "");
    else this.removeAttribute("hidden");
  }
  _adopt(c) {
    if (typeof c === "string") c = new TextNode(this.doc, c);
    if (c.parentNode) c.parentNode.childNodes = c.parentNode.childNodes.filter((x) => x !== c);
    c.parentNode = this;
    return c;
  }
  appendChild(c) {
    c = this._adopt(c);
    this.childNodes.push(c);
    return c;
  }
  append(...cs) {
    for (const c of cs) this.appendChild(c);
  }
  replaceChildren(...cs) {
    for (const c of this.childNodes) c.parentNode = null;
    this.childNodes = [];
    this.append(...cs);
  }
  get children() {
    return this.childNodes.filter((c) => c.nodeType === 1);
  }
  addEventListener(type, fn) {
    (this.listeners[type] ??= []).push(fn);
  }
  removeEventListener(type, fn) {
    this.listeners[type] = (this.listeners[type] || []).filter((f) => f !== fn);
  }
  dispatch(type, ev = {}) {
    const e = { target: this, stopPropagation() {}, preventDefault() {}, ...ev };
    for (let n = this; n; n = n.parentNode) for (const fn of n.listeners?.[type] || []) fn(e);
  }
  matches(sel) {
    // tag, .class, [attr] and [attr=value] (one each), e.g. tr.nnx-module or th[data-col]
    const m = /^([a-z0-9]*)((?:\.[\w-]+)*)((?:\[[\w-]+(?:=[^\]]+)?\])*)$/i.exec(sel.trim());
    if (!m) throw new Error(`fake selector: ${sel}`);
    if (m[1] && m[1].toUpperCase() !== this.tagName) return false;
    for (const c of m[2].split(".").filter(Boolean)) if (!this.classes().includes(c)) return false;
    for (const a of m[3].match(/\[[^\]]+\]/g) || []) {
      const [k, v] = a.slice(1, -1).split("=");
      if (!this.attributes.has(k)) return false;
      if (v !== undefined && this.attributes.get(k) !== v.replace(/^["']|["']$/g, "")) return false;
    }
    return true;
  }
  closest(sel) {
    for (let n = this; n && n.nodeType === 1; n = n.parentNode) if (n.matches(sel)) return n;
    return null;
  }
  querySelectorAll(sel) {
    const out = [];
    const walk = (n) => {
      for (const c of n.children) {
        if (c.matches(sel)) out.push(c);
        walk(c);
      }
    };
    walk(this);
    return out;
  }
  querySelector(sel) {
    return this.querySelectorAll(sel)[0] || null;
  }
}

export class FakeDocument {
  constructor() {
    this.calls = [];
  }
  createElement(tag) {
    this.calls.push(["createElement", tag]);
    return new Element(this, tag);
  }
  createElementNS(ns, tag) {
    this.calls.push(["createElementNS", ns, tag]);
    return new Element(this, tag, ns);
  }
  createTextNode(s) {
    this.calls.push(["createTextNode", s]);
    return new TextNode(this, s);
  }
}

/** A fake anywidget model: traits, change events, custom messages, recorded sends. */
export class FakeModel {
  constructor(traits) {
    this.traits = { ...traits };
    this.handlers = {};
    this.sent = [];
    this.saves = 0;
  }
  get(k) {
    return this.traits[k];
  }
  set(k, v) {
    const old = this.traits[k];
    this.traits[k] = v;
    if (old !== v) this.emit(`change:${k}`, this, v);
  }
  save_changes() {
    this.saves += 1;
  }
  on(n, cb) {
    (this.handlers[n] ??= []).push(cb);
  }
  off(n, cb) {
    this.handlers[n] = (this.handlers[n] || []).filter((f) => f !== cb);
  }
  emit(n, ...a) {
    for (const cb of this.handlers[n] || []) cb(...a);
  }
  send(msg) {
    this.sent.push(msg);
  }
}
