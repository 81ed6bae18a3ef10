// @ts-check
// The only way this package puts data into the DOM: text nodes and attributes, never HTML.
// Every function takes the document explicitly so that tests can pass a fake one.

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * Attributes of h()/s(): null, undefined and false leave one out, true sets it to "".
 * @typedef {Record<string, string | number | boolean | null | undefined>} Props
 */
/**
 * A child of h()/s(): a node, or what becomes a text node (null, undefined and false: none).
 * @typedef {Node | string | number | boolean | null | undefined} Child
 */
/**
 * An event whose target is an element: what the widgets' delegated listeners read (`closest`, `checked`).
 * @template {Element} [E=HTMLElement]
 * @template {Event} [V=Event]
 * @typedef {V & {target: E}} On
 */

/**
 * A text node holding `s` verbatim (null/undefined -> empty).
 * @param {Document} doc
 * @param {unknown} s
 */
export function text(doc, s) {
  return doc.createTextNode(s === null || s === undefined ? "" : String(s));
}

/**
 * @template {Element} E
 * @param {Document} doc
 * @param {E} node
 * @param {Props | null | undefined} props
 * @param {Child[]} children
 * @returns {E}
 */
function fill(doc, node, props, children) {
  if (props) {
    for (const k of Object.keys(props)) {
      const v = props[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.setAttribute("class", String(v));
      else if (k === "text") node.textContent = String(v);
      else if (k === "style") node.setAttribute("style", String(v));
      else node.setAttribute(k, v === true ? "" : String(v));
    }
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(typeof c === "object" ? c : text(doc, c));
  }
  return node;
}

/**
 * h(doc, "span", {class: "x", title: path}, "text", childNode, ...): an element whose string
 * children become text nodes and whose props become attributes (`text` sets textContent).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {Document} doc
 * @param {K} tag
 * @param {Props | null} [props]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(doc, tag, props, ...children) {
  return fill(doc, doc.createElement(tag), props, children);
}

/**
 * Same as h() for SVG elements.
 * @template {keyof SVGElementTagNameMap} K
 * @param {Document} doc
 * @param {K} tag
 * @param {Props | null} [props]
 * @param {...Child} children
 * @returns {SVGElementTagNameMap[K]}
 */
export function s(doc, tag, props, ...children) {
  return fill(doc, doc.createElementNS(SVG_NS, tag), props, children);
}

/** Replace what `node` shows with the plain text `value`. */
export function setText(node, value) {
  const t = value === null || value === undefined ? "" : String(value);
  if (node.textContent !== t) node.textContent = t;
}

/** Set a boolean attribute (`disabled`/`hidden` as "", others as "true") or remove it. */
export function setFlag(node, attr, on) {
  if (on) node.setAttribute(attr, attr === "disabled" || attr === "hidden" ? "" : "true");
  else node.removeAttribute(attr);
}

/**
 * Make `old` look like `fresh` (attributes, text, children) while keeping the elements that
 * did not change in place: a click that starts before a live refresh still lands on the same
 * row, and hover/selection survive. `fresh` is consumed.
 */
export function patch(old, fresh) {
  if (old.nodeType === 3) {
    if (old.data !== fresh.data) old.data = fresh.data;
    return;
  }
  const names = new Set(fresh.getAttributeNames());
  for (const n of old.getAttributeNames()) if (!names.has(n)) old.removeAttribute(n);
  for (const n of names) {
    const v = fresh.getAttribute(n);
    if (old.getAttribute(n) !== v) old.setAttribute(n, v);
  }
  const a = old.childNodes;
  const b = fresh.childNodes;
  let same = a.length === b.length;
  for (let i = 0; same && i < a.length; i++) {
    same = a[i].nodeType === b[i].nodeType && (a[i].nodeType === 3 || a[i].tagName === b[i].tagName);
  }
  if (!same) {
    old.replaceChildren(...Array.from(b));
    return;
  }
  for (let i = 0; i < a.length; i++) patch(a[i], b[i]);
}
