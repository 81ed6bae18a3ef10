"""The summary, compare, capture and split widgets fit the output they are given (issue 35): at output
widths of 800 and 1048 px (JupyterLab's output at a 1500 x 1000 window with the file browser open),
with realistic content (a transformer block's summary with --grad, a comparison with shape
mismatches and modules only one side has, a capture with gradients, a split with a remainder),
nothing scrolls sideways with the default columns, every header is a word, every cut cell has its
full text on hover, and the columns left out are listed behind a visible "+N columns" control,
one click away. One notebook, one kernel: every width and widget is measured on the same page."""

from __future__ import annotations

import os
from pathlib import Path

from . import pages
from .test_quickstart_browser import write_notebook

WIDTHS = (1048, 360, 800)  # 360: an 800 px window with the file browser open; 800 last: the pickers are tried there
SHOTS = Path(os.environ.get("NNX_LAB_SHOTS", "/work/shots"))

MODEL = (
    "class Block(nnx.Module):\n"
    "    def __init__(self, d, rngs):\n"
    "        self.norm = nnx.LayerNorm(d, rngs=rngs)\n"
    "        self.attn = nnx.MultiHeadAttention(4, d, decode=False, rngs=rngs)\n"
    "        self.up = nnx.Linear(d, 4 * d, rngs=rngs)\n"
    "        self.down = nnx.Linear(4 * d, d, rngs=rngs)\n\n"
    "    def __call__(self, x):\n"
    "        x = x + self.attn(self.norm(x))\n"
    "        h = nnx.gelu(self.up(x))\n"
    "        self.sow(nnx.Intermediate, 'hidden_activation', h)\n"
    "        h = self.perturb('hidden_gradient', h)\n"
    "        return x + self.down(h)\n\n"
    "class Net(nnx.Module):\n"
    "    def __init__(self, d=64, out=16, extra=False, seed=0):\n"
    "        rngs = nnx.Rngs(seed)\n"
    "        self.embed = nnx.Linear(3, d, rngs=rngs)\n"
    "        self.blocks = getattr(nnx, 'List', list)([Block(d, rngs) for _ in range(2)])  # flax 0.11: a list\n"
    "        if extra:\n"
    "            self.adapter = nnx.Sequential(nnx.Linear(d, d, rngs=rngs), nnx.Linear(d, d, rngs=rngs))\n"
    "        self.head = nnx.Linear(d, out, rngs=rngs)\n\n"
    "    def __call__(self, x):\n"
    "        x = self.embed(x)\n"
    "        for b in self.blocks:\n"
    "            x = b(x)\n"
    "        return self.head(x)\n\n"
    "model = Net()\n"
    "x = jnp.linspace(-1, 1, 2 * 32 * 3).reshape(2, 32, 3)"
)
CELLS = (
    "import jax, jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab\n%load_ext nnx_lab",
    MODEL,
    "%nnx_summary model (2, 32, 3) --grad --no-memory",
    "other = Net(out=8, extra=True, seed=1)  # the head resized, an adapter added, every value moved\n"
    "nnx_lab.compare(model, other)",
    "panel = nnx_lab.capture_panel(model)\ny = panel(x)\nres = panel.grads(lambda m, x: (m(x) ** 2).mean(), x)",
    "%nnx_split model nnx.Param nnx.LayerNorm nnx.PathContains('attn')",
)
# widget -> (its root in the output, a row that says it has drawn)
WIDGETS = {
    "summary": (".nnx-lab-summary-view", "tr.nnx-sum-row"),
    "compare": (".nnx-lab-compare", "tr.nnx-cmp-row"),
    "capture": (".nnx-lab-capture", "tr.nnx-capture-row"),
    "split": (".nnx-lab-split-view", "tr.nnx-split-row"),
}

# Text cut by an ellipsis on an element inside a cell (a chip's name, a filter's label): its full
# text must be in its own title or its cell's after a hover, like a cut cell's.
_JS_CUT_INSIDE = """(root) => {
    const out = [];
    for (const el of root.querySelectorAll('td *, th *')) {
        if (el.getClientRects().length === 0 || el.scrollWidth <= el.clientWidth + 1) continue;
        if (getComputedStyle(el).textOverflow !== 'ellipsis') continue;
        const cell = el.closest('td, th');
        cell.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
        const titles = [el.getAttribute('title') || '', cell.getAttribute('title') || ''].join('\\n');
        out.push({text: el.innerText.trim(), titles, full: titles.includes(el.innerText.trim())});
    }
    return out;
}"""


def measure(root) -> dict:
    report = pages.fit_report(root)
    report["cut"] += root.evaluate(_JS_CUT_INSIDE)
    return report


def problems(name: str, width: int, report: dict) -> list[str]:
    """What a user at this width cannot see or read: each a line naming the widget and width."""
    out = []
    where = f"{name} at {width} px"
    if report["root"]["scroll"] > report["root"]["client"]:
        out.append(f"{where}: the widget is wider than its output {report['root']}")
    # the split's filter columns are what it shows and do not fold: at 360 px its table scrolls
    # sideways under a sticky path column instead
    for box in [] if (name, width) == ("split", 360) else report["wide"]:
        out.append(f"{where}: scrolls sideways {box}")
    for head in report["headers"]:
        if not any(ch.isalpha() for ch in head["text"]):
            out.append(f"{where}: header without a word {head}")
    for cell in report["cut"]:
        if not cell["full"]:
            out.append(f"{where}: cut cell without its full text {cell}")
    return out


def test_summary_compare_capture_and_split_fit_800_and_1048_px(
    page, page_events, jupyter_server, open_notebook, run_all_cells, tmp_path
):
    page.set_viewport_size({"width": 1500, "height": 1000})
    nb = write_notebook(tmp_path / "fit_widgets.ipynb", *CELLS)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    roots = {name: pages.widget_root(page, sel, row) for name, (sel, row) in WIDGETS.items()}
    # the capture's gradient columns arrive with the last report
    roots["capture"].locator("th[data-col=gmean]").wait_for(state="attached", timeout=30_000)
    assert roots["summary"].locator("[data-col=bwd]").count() >= 1, "the backward FLOPs column (--grad)"

    SHOTS.mkdir(parents=True, exist_ok=True)
    found: list[str] = []
    for width in WIDTHS:
        reached = pages.set_output_width(page, roots["summary"], width)
        assert abs(reached - width) < 1, reached
        for name, root in roots.items():
            root.scroll_into_view_if_needed()
            page.wait_for_timeout(200)  # the windowed table draws the rows that scrolled in
            report = measure(root)
            print(f"{name} at {width} px: {report}")
            if name == "split" and width == 360:  # it scrolls sideways there (problems()), under its paths
                assert root.evaluate("(r) => getComputedStyle(r.querySelector('td.c-path')).position === 'sticky'")
            found += problems(name, width, report)
            found += [f"{name} at {width} px: a control's label wraps: {c!r}" for c in pages.wrapped_controls(root)]
            if name == "summary":  # class names are read whole ("MultiHeadAttention"), not on hover
                cut = root.evaluate(
                    "(r) => [...r.querySelectorAll('td.c-cls')].filter((td) => td.scrollWidth > td.clientWidth + 1)"
                    ".map((td) => td.innerText)"
                )
                found += [f"summary at {width} px: class cut: {c}" for c in cut]
            page.mouse.move(2, 2)  # no row :hover-tinted in the picture
            root.screenshot(path=str(SHOTS / f"{name}-lab-{width}.png"))
    assert not found, "\n".join(found)

    # Nothing is lost: at 800 px each widget lists the columns it left out behind "+N columns", and a
    # click on one shows it.
    for name, root in roots.items():
        picker = root.locator(".nnx-colpick")
        assert picker.is_visible(), name
        folded = picker.locator("input[type=checkbox]:not(:checked)")
        n = folded.count()
        assert n >= 1, name
        assert picker.locator("summary").inner_text().strip() == f"+{n} column{'s' if n > 1 else ''}", name
        picker.locator("summary").click()
        col = folded.first.get_attribute("data-col")
        picker.locator(f'input[data-col="{col}"]').check()
        root.locator(f'th[data-col="{col}"]').wait_for(state="visible", timeout=5_000)
        assert picker.locator(".nnx-colpick-list").is_visible(), name  # the list stays open, over the table
        root.screenshot(path=str(SHOTS / f"{name}-lab-800-picked.png"))
    assert not page_events.script_dialogs, page_events.dialogs
    assert not page_events.page_errors, page_events.page_errors
