"""Every static HTML copy (what a saved notebook, nbviewer, GitHub or an exported page shows where no
widget runs: ``_repr_html_`` of a snapshot, split report, summary, comparison, memory ledger and
non-finite report) reads at WCAG AA on a light page and on two dark ones: JupyterLab Dark's text on
its background, and VS Code's Dark+. The page's own colours are all these copies know, as on
GitHub; contrast is measured as in test_dark_theme_browser (each text node's colour over what is
painted under it). Before the split report mixed its filter colours with the text colour, its filter
names were 3.3-3.7:1 on white (#43a047, #1e88e5)."""

from __future__ import annotations

import jax.numpy as jnp
import pytest
from flax import nnx

import nnx_lab

from .test_dark_theme_browser import _JS_CONTRAST

# page background, text colour, whether the page is dark
HOSTS = {
    "light": ("#ffffff", "#000000", False),
    "lab-dark": ("#111111", "rgba(255, 255, 255, 0.87)", True),
    "vscode-dark-plus": ("#1e1e1e", "#cccccc", True),
}


class Net(nnx.Module):
    def __init__(self, seed=0, extra=False):
        rngs = nnx.Rngs(seed)
        self.lin = nnx.Linear(4, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)
        if extra:
            self.adapter = nnx.Linear(8, 8, rngs=rngs)
        self.head = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.head(self.drop(self.bn(self.lin(x))))


@pytest.fixture(scope="module")
def copies() -> dict[str, str]:
    model, other, x = Net(), Net(1, extra=True), jnp.ones((3, 4))
    faulty = Net(2)
    faulty.head.kernel[...] = faulty.head.kernel[...].at[0, 0].set(jnp.nan)
    return {
        "snapshot": nnx_lab.snapshot(model)._repr_html_(),
        # no `...`: the remainder column is shown too
        "split": nnx_lab.split_report(model, nnx.Param, nnx.BatchStat, nnx.Variable)._repr_html_(),
        "split-remainder": nnx_lab.split_report(model, nnx.Param)._repr_html_(),
        "summary": nnx_lab.summary(model, x, memory=False)._repr_html_(),
        "compare": nnx_lab.compare(model, other)._repr_html_(),
        "memory": nnx_lab.memory(namespace={"model": model})._repr_html_(),
        "nonfinite": nnx_lab.find_nonfinite(lambda m, x: m(x).mean(), faulty, x)._repr_html_(),
    }


def _on_a_page(browser, copies, page_html: str, js: str, arg=None, width: int = 1200) -> dict:
    """``js(root, arg)``'s answer for each static copy, shown alone in ``page_html`` (with a
    ``{html}`` slot inside an element ``#copy``)."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        answers = {}
        for name, html in copies.items():
            page.set_content(page_html.replace("{html}", html))
            answers[name] = page.evaluate(f"([arg]) => ({js})(document.getElementById('copy'), arg)", [arg])
        return answers
    finally:
        context.close()


@pytest.mark.parametrize("host", list(HOSTS))
def test_every_static_copy_reads_at_wcag_aa(browser, copies, host):
    background, text, dark = HOSTS[host]
    page = (
        f'<html><body style="background:{background};color:{text};font-family:sans-serif;font-size:13px">'
        '<div id="copy">{html}</div></body></html>'
    )
    found = []
    for name, result in _on_a_page(
        browser, copies, page, f"(root, dark) => ({_JS_CONTRAST})([root, dark])", dark
    ).items():
        assert result["texts"] >= 1, f"{host} {name}: no text measured"
        found += [f"{host} {name}: {line}" for line in dict.fromkeys(result["found"])]
    assert not found, "\n".join(found)


_JS_TIGHTEST = """(root) => {
  // the narrowest gap between the text of two neighbouring cells of one row, with what they read
  const box = (cell) => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const r = range.getBoundingClientRect();
    return r.width ? r : null;
  };
  let tightest = null;
  for (const row of root.querySelectorAll("tr")) {
    const cells = [...row.children].filter((c) => c.textContent.trim());
    for (let i = 0; i + 1 < cells.length; i++) {
      const [a, b] = [box(cells[i]), box(cells[i + 1])];
      if (!a || !b || Math.abs(a.top - b.top) > a.height) continue;
      const gap = b.left - a.right;
      if (!tightest || gap < tightest.gap)
        tightest = { gap, between: cells[i].textContent.trim() + " | " + cells[i + 1].textContent.trim() };
    }
  }
  return tightest;
}"""


def test_every_static_table_keeps_its_cells_apart_on_a_bare_page(browser, copies):
    """A page with no table styles of its own (Colab's output frame, VS Code's, an exported page's
    plain HTML) shows every static table with room between cells: before the cells carried their own
    padding, the split table read "BatchStat(8,)" and "float32128 B" (2 px between cells)."""
    page = '<html><body style="font-family:sans-serif;font-size:13px"><div id="copy">{html}</div></body></html>'
    tight = [
        f"{name}: {found['gap']:.1f} px between {found['between']!r}"
        for name, found in _on_a_page(browser, copies, page, _JS_TIGHTEST).items()
        if found is not None and found["gap"] < 8
    ]
    assert not tight, "\n".join(tight)


# JupyterLab's own rules for rendered HTML outputs (jupyterlab 4's .jp-RenderedHTMLCommon and
# .jp-OutputArea-output), which the copies' inline styles must win against.
_LAB_RULES = """
#copy td, #copy th, #copy tr { vertical-align: middle; padding: 0.5em; line-height: normal;
  white-space: normal; max-width: none; border: none; text-align: right; }
#copy table { border-collapse: collapse; border-spacing: 0; table-layout: fixed; margin-left: auto; margin-right: auto; }
#copy pre { white-space: pre-wrap; word-break: break-all; word-wrap: break-word; overflow-x: auto; }
"""

_JS_WRAPPED = """(root) => {
  // cells whose text runs over more than one line (a <br> in a header is meant)
  const wrapped = [];
  for (const cell of root.querySelectorAll("td, th")) {
    if (cell.querySelector("br") || !cell.textContent.trim()) continue;
    const tops = new Set();  // the lines its text nodes take (a comparison's bar under its figure is no text)
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) if (r.width) tops.add(Math.round(r.top));
    }
    if (tops.size > 1) wrapped.push(cell.textContent.trim());
  }
  return wrapped;
}"""


def test_no_static_cell_wraps_in_a_narrow_jupyterlab_output(browser, copies):
    """JupyterLab sets its output cells to wrap: at 800 px with the file browser open (a 440 px output)
    the split table read shapes as "(64, 1," over "64)". Each cell stays on one line; the table scrolls."""
    page = (
        f'<html><head><style>{_LAB_RULES}</style></head><body style="font-family:sans-serif;font-size:13px">'
        '<div id="copy" style="width:440px;overflow:auto">{html}</div></body></html>'
    )
    answers = _on_a_page(browser, copies, page, _JS_WRAPPED, width=800)
    wrapped = [f"{name}: {t!r}" for name, texts in answers.items() for t in texts]
    assert not wrapped, "\n".join(wrapped[:20])
