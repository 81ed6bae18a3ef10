// The split report widget rendered into a fake DOM with a fake anywidget model.
import test from "node:test";
import assert from "node:assert/strict";
import { FakeDocument, FakeModel } from "./fakedom.js";
import { big, partial, shadowing } from "./splitfixtures.js";

globalThis.requestAnimationFrame ??= (cb) => setTimeout(() => cb(performance.now()), 1);
globalThis.cancelAnimationFrame ??= (id) => clearTimeout(id);
const tick = (ms = 10) => new Promise((r) => setTimeout(r, ms));

const { default: widget } = await import("../src/split.js");

const SCRIPT = "<script>alert(1)</script>";
const IMG = "<img src=x onerror=alert(1)>";

function mount(report) {
  const doc = new FakeDocument();
  const el = doc.createElement("div");
  const model = new FakeModel({ report });
  const cleanup = widget.render({ model, el });
  const q = (sel) => el.querySelectorAll(sel);
  const paths = () => q("tr.nnx-split-row").map((t) => t.getAttribute("data-path"));
  const row = (path) => q("tr.nnx-split-row").find((t) => t.getAttribute("data-path") === path);
  const header = (i) => q(`th.nnx-split-filter[data-filter=${i}]`)[0];
  return { doc, el, model, cleanup, q, paths, row, header };
}

test("header, code, problems, one column per filter with taken and shadowed marks", () => {
  const { el, q, row, paths, cleanup } = mount(shadowing());
  assert.equal(el.children[0].getAttribute("class"), "nnx-lab-split-view");
  const head = q(".nnx-split-head")[0].textContent;
  assert.ok(head.startsWith("Sequential"), head);
  assert.ok(head.includes("8 Variables") && head.includes("3 filters"), head);
  assert.equal(q("code.nnx-split-code-text")[0].textContent, shadowing().code);
  assert.equal(q("button.nnx-split-copy")[0].textContent, "copy");
  const problems = q("ul.nnx-split-problems")[0];
  assert.equal(problems.hidden, false);
  assert.deepEqual(
    problems.children.map((li) => li.textContent),
    shadowing().problems,
  );

  const filters = q("th.nnx-split-filter");
  assert.equal(filters.length, 3);
  assert.deepEqual(
    filters.map((th) => th.getAttribute("data-filter")),
    ["0", "1", "2"],
  );
  assert.equal(filters[0].querySelector(".nm").textContent, "param");
  assert.equal(filters[0].querySelector(".lb").textContent, "nnx.Param");
  assert.equal(filters[0].querySelector(".ct").textContent, "4 \u00B7 60 B");
  assert.equal(q("th.nnx-split-rest").length, 0); // exhaustive: no remainder column

  assert.equal(paths().length, 8);
  const kernel = row("layers[0].kernel");
  assert.ok(kernel.classList.contains("shadowed"));
  assert.equal(kernel.querySelector("td.c-type").textContent, "Param");
  assert.equal(kernel.querySelector("td.c-shape").textContent, "(2, 3)");
  assert.equal(kernel.querySelector("td.c-dtype").textContent, "float32");
  assert.equal(kernel.querySelector("td.c-bytes").textContent, "24 B");
  const mark = (tr, i) => tr.querySelector(`td.f-${i}`).children.map((m) => m.getAttribute("class"));
  assert.deepEqual(mark(kernel, 0), ["nnx-mark taken"]);
  assert.deepEqual(mark(kernel, 1), ["nnx-mark shadowed"]);
  assert.equal(kernel.querySelector("td.f-2").children.length, 0);
  const mean = row("layers[1].mean");
  assert.ok(!mean.classList.contains("shadowed") && !mean.classList.contains("remainder"));
  assert.equal(mean.querySelector("td.f-0").children.length, 0);
  assert.deepEqual(mark(mean, 1), ["nnx-mark taken"]);
  assert.equal(q("td.f-2").flatMap((td) => td.children).length, 0);
  assert.equal(q(".nnx-mark.taken").length, 8);
  assert.equal(q(".nnx-mark.shadowed").length, 4);
  assert.equal(row("layers[2].rngs.count").querySelector("td.c-shape").textContent, "()");
  cleanup();
});

test("clicking a filter header shows only its Variables; again shows all", () => {
  const { q, paths, header, cleanup } = mount(shadowing());
  header(0).querySelector(".nm").dispatch("click");
  assert.deepEqual(paths(), ["layers[0].bias", "layers[0].kernel", "layers[1].bias", "layers[1].scale"]);
  assert.equal(header(0).getAttribute("aria-pressed"), "true");
  assert.ok(q(".nnx-split-showing")[0].textContent.startsWith("param: 4 taken (4 of 8 Variables)"));
  header(2).dispatch("click");
  assert.deepEqual(paths(), []);
  assert.equal(header(0).getAttribute("aria-pressed"), "false");
  assert.equal(q(".nnx-empty")[0].hidden, false);
  header(2).dispatch("click");
  assert.equal(paths().length, 8);
  assert.equal(header(2).getAttribute("aria-pressed"), "false");
  assert.equal(q(".nnx-empty")[0].hidden, true);
  cleanup();
});

test("remainder: a highlighted column and rows, clickable like a filter", () => {
  const { q, paths, row, cleanup } = mount(partial());
  const rest = q("th.nnx-split-rest");
  assert.equal(rest.length, 1);
  assert.equal(q("th.nnx-split-filter").length, 2);
  assert.equal(rest[0].querySelector(".ct").textContent, "2 \u00B7 12 B");
  assert.ok(row("layers[2].rngs.key").classList.contains("remainder"));
  assert.ok(!row("layers[0].kernel").classList.contains("remainder"));
  assert.equal(q("tr.remainder").length, 2);
  assert.equal(q("td.c-rest").flatMap((td) => td.querySelectorAll(".nnx-mark.rest")).length, 2);
  assert.ok(q("ul.nnx-split-problems")[0].children[0].textContent.includes("add `...` as the last filter"));
  assert.ok(q(".nnx-split-head")[0].textContent.includes("2 in no filter"));
  rest[0].dispatch("click");
  assert.deepEqual(paths(), ["layers[2].rngs.count", "layers[2].rngs.key"]);
  rest[0].dispatch("click");
  assert.equal(paths().length, 8);
  cleanup();
});

test("user strings stay text (XSS): paths, aliases, labels, names, types, problems, code", () => {
  const rep = partial();
  rep.root_type = IMG;
  rep.rows.path[1] = `d['${SCRIPT}']`;
  rep.rows.aliases[1] = [`e['${IMG}']`];
  rep.rows.type[1] = IMG;
  rep.rows.dtype[1] = SCRIPT;
  rep.filters[0].label = `PathContains('${SCRIPT}')`;
  rep.names[1] = IMG;
  rep.problems.push(`${SCRIPT} went to ${IMG}`);
  rep.code = `x = nnx.split(model, PathContains('${SCRIPT}'))`;
  const { doc, el, q, row, header, cleanup } = mount(rep);
  const evil = row(`d['${SCRIPT}']`);
  assert.ok(evil);
  assert.equal(evil.querySelector("td.c-path").textContent, `d['${SCRIPT}']= e['${IMG}']`);
  assert.equal(evil.querySelector(".alias").textContent, `= e['${IMG}']`);
  assert.equal(evil.querySelector("td.c-type").textContent, IMG);
  assert.equal(evil.querySelector("td.c-dtype").textContent, SCRIPT);
  assert.equal(header(0).querySelector(".lb").textContent, `PathContains('${SCRIPT}')`);
  assert.equal(header(0).querySelector(".nm").textContent, IMG);
  assert.ok(q(".nnx-split-head")[0].textContent.startsWith(IMG));
  assert.ok(q("ul.nnx-split-problems")[0].textContent.includes(`${SCRIPT} went to ${IMG}`));
  assert.equal(q("code.nnx-split-code-text")[0].textContent, rep.code);
  for (const tag of ["script", "img"]) {
    assert.ok(!doc.calls.some((c) => c[0] === "createElement" && c[1] === tag), tag);
  }
  assert.equal(el.querySelectorAll("img").length + el.querySelectorAll("script").length, 0);
  cleanup();
});

test("a 10 000-Variable report keeps a small DOM and a capped problems list", async () => {
  const { q, paths, header, el, cleanup } = mount(big(10000));
  const n = q("tr.nnx-split-row").length;
  assert.ok(n > 0 && n < 100, String(n));
  assert.equal(paths()[0], "layers[0].w");
  const problems = q("ul.nnx-split-problems")[0].children;
  assert.equal(problems.length, 13);
  assert.ok(problems[12].classList.contains("more"));
  assert.ok(problems[12].textContent.startsWith("4988 more"));
  problems[12].querySelector("button").dispatch("click");
  assert.equal(q("ul.nnx-split-problems")[0].children.length, 513);
  // scroll: the window moves, the DOM stays small
  const scroller = q(".nnx-scroll")[0];
  scroller.scrollTop = 100000;
  scroller.dispatch("scroll");
  await tick(20);
  const after = paths();
  assert.ok(after.length < 100, String(after.length));
  assert.ok(after.includes("layers[5000].w"), after.slice(0, 3).join());
  header(1).dispatch("click");
  assert.ok(q("tr.nnx-split-row").length < 100);
  assert.ok(q(".nnx-split-showing")[0].textContent.startsWith("variable: 5000 taken + 5000 matched"));
  assert.ok(el.querySelectorAll("td").length < 100 * 8);
  cleanup();
});

test("a new report replaces the table; cleanup unsubscribes", () => {
  const { model, q, paths, header, cleanup } = mount(shadowing());
  header(2).dispatch("click");
  assert.deepEqual(paths(), []);
  model.set("report", partial());
  assert.equal(q("th.nnx-split-filter").length, 2); // filter 2 is gone, so the table filter is off
  assert.equal(paths().length, 8);
  assert.equal(q("th.nnx-split-rest").length, 1);
  assert.equal(q("code.nnx-split-code-text")[0].textContent, partial().code);
  model.set("report", {});
  assert.equal(paths().length, 0);
  assert.equal(q(".nnx-empty")[0].textContent, "no Variables");
  assert.equal(q("ul.nnx-split-problems")[0].hidden, true);
  cleanup();
  assert.equal(model.handlers["change:report"].length, 0);
});

test("copy: the clipboard when there is one, else the text is selected", async () => {
  const { q, cleanup } = mount(shadowing());
  const btn = q("button.nnx-split-copy")[0];
  const had = Object.getOwnPropertyDescriptor(globalThis, "navigator");
  const written = [];
  Object.defineProperty(globalThis, "navigator", {
    value: {
      clipboard: {
        writeText: async (t) => {
          written.push(t);
        },
      },
    },
    configurable: true,
    writable: true,
  });
  try {
    btn.dispatch("click");
    await tick();
    assert.deepEqual(written, [shadowing().code]);
    assert.equal(btn.textContent, "copied");
    Object.defineProperty(globalThis, "navigator", { value: {}, configurable: true, writable: true });
    btn.dispatch("click");
    await tick();
    assert.equal(btn.textContent, "copy"); // the fake document cannot select: nothing breaks
  } finally {
    if (had) Object.defineProperty(globalThis, "navigator", had);
    else delete globalThis.navigator;
  }
  cleanup();
});
