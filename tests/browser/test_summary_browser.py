"""The summary widget in a real browser: %nnx_summary's rows as a tree, sort by FLOPs, filter,
collapse, the FLOPs bars, the peak memory arriving from the background compile, user strings as text."""

from __future__ import annotations

from . import pages
from .test_quickstart_browser import write_notebook

EVIL = "<img src=x onerror=alert(1)>"
MODEL = (
    "class Block(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.attn = nnx.MultiHeadAttention(2, 8, decode=False, rngs=rngs)\n"
    "        self.up = nnx.Linear(8, 32, rngs=rngs)\n"
    "        self.down = nnx.Linear(32, 8, rngs=rngs)\n\n"
    "    def __call__(self, x):\n"
    "        x = x + self.attn(x)\n"
    "        return x + self.down(nnx.relu(self.up(x)))\n\n"
    "class Net(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.embed = nnx.Linear(4, 8, rngs=rngs)\n"
    "        self.blocks = nnx.List([Block(rngs) for _ in range(2)])\n"
    f"        self.d = nnx.data({{{EVIL!r}: nnx.Linear(8, 8, rngs=rngs)}})\n"
    "        self.head = nnx.Linear(8, 2, rngs=rngs)\n\n"
    "    def __call__(self, x):\n"
    "        x = self.embed(x)\n"
    "        for b in self.blocks:\n"
    "            x = b(x)\n"
    f"        return self.head(self.d[{EVIL!r}](x))\n\n"
    "model = Net(nnx.Rngs(0))"
)
SETUP = ("import jax.numpy as jnp\nfrom flax import nnx\n%load_ext nnx_lab", MODEL)
ROW = "tr.nnx-sum-row"


def expected():
    """The same summary, computed here: (path text, depth, flops) per row in call order."""
    import jax.numpy as jnp
    from flax import nnx

    import nnx_lab

    scope = {"nnx": nnx, "jnp": jnp}
    exec(MODEL, scope)
    s = nnx_lab.summary(scope["model"], jnp.ones((2, 5, 4)), memory=False)
    return [(r.path or "(Net)", r.depth, r.flops) for r in s.rows]


def sorted_walk(rows, key=None):
    """The rows depth first, each row's children ordered by `key` (descending, call order among equals)."""
    kids, stack, roots = {i: [] for i in range(len(rows))}, [], []
    for i, (_, depth, _) in enumerate(rows):
        while stack and rows[stack[-1]][1] >= depth:
            stack.pop()
        (kids[stack[-1]] if stack else roots).append(i)
        stack.append(i)
    out = []

    def walk(ids):
        for i in sorted(ids, key=lambda i: (-key(i), i)) if key else ids:
            out.append(rows[i][0])
            walk(kids[i])

    walk(roots)
    return out


def paths(root):
    """The rows drawn, once the window has settled: its whole table in view (a windowed table draws the
    rows on screen) and two reads 100 ms apart agreeing (it redraws on the frame after a click)."""
    root.evaluate("el => el.scrollIntoView({block: 'end'})")
    seen = pages.row_paths(root, ROW)
    for _ in range(30):
        root.page.wait_for_timeout(100)
        again = pages.row_paths(root, ROW)
        if again == seen:
            break
        seen = again
    return seen


def settled_paths(page, root, expected, timeout_s: float = 15):
    """The rows once the window has drawn `expected` (or the last ones seen after `timeout_s`): a table
    drawn while its output was still being laid out redraws when its size settles (ResizeObserver)."""
    seen = paths(root)
    for _ in range(int(timeout_s * 10)):
        if seen == expected:
            break
        page.wait_for_timeout(100)
        seen = paths(root)
    return seen


def test_nnx_summary_widget(page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path):
    rows = expected()
    nb = write_notebook(
        tmp_path / "summary.ipynb",
        *SETUP,
        "%nnx_summary model (2, 5, 4) --as s",
        "import nnx_lab\nnnx_lab.summary(model, jnp.ones((2, 5, 4)))  # a Summary as the cell's value",
    )
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = pages.widget_root(page, ".nnx-lab-summary-view", ROW)

    # Every module call, as a tree in call order; the bars: each row's share of the model's FLOPs.
    assert settled_paths(page, root, [p for p, _, _ in rows]) == [p for p, _, _ in rows]
    assert root.locator(".nnx-sum-title").inner_text().startswith("Net.__call__")
    model_bar = root.locator(f'{ROW}[data-path="(Net)"] td.c-flops .bar').get_attribute("style")
    assert "width:100.00%" in model_bar, model_bar
    flops = dict((p, f) for p, _, f in rows)
    share = 100 * flops["blocks[0].up"] / flops["(Net)"]
    bar = root.locator(f'{ROW}[data-path="blocks[0].up"] td.c-flops .bar').get_attribute("style")
    assert f"width:{share:.2f}%" in bar, (bar, share)

    # The peak memory line arrives from the background compile, without another cell.
    root.locator(".nnx-sum-head").get_by_text("Peak memory per device").wait_for(timeout=60_000)

    # User strings are text: the XSS key shows literally, nothing was parsed as HTML.
    assert f"d['{EVIL}']" in root.inner_text()
    assert root.locator("img, script, [onerror]").count() == 0
    assert page.locator('img[src="x"]').count() == 0
    screenshot(page, "summary-lab", scroll_to=root)

    # Sort by FLOPs: descending first (the costliest among its siblings on top), then ascending, then off.
    root.locator('th[data-col="flops"]').click()
    assert paths(root) == sorted_walk(rows, key=lambda i: rows[i][2])
    assert root.locator('th[data-col="flops"]').get_attribute("aria-sort") == "descending"
    screenshot(page, "summary-lab-sorted", scroll_to=root)
    root.locator('th[data-col="flops"]').click()
    assert paths(root) == sorted_walk(rows, key=lambda i: -rows[i][2])
    root.locator('th[data-col="flops"]').click()
    assert paths(root) == [p for p, _, _ in rows]

    # Filter: the calls whose path or class holds the words, and their ancestors.
    root.locator("input.nnx-sum-filter").fill("attn query")
    assert paths(root) == ["(Net)", "blocks[0]", "blocks[0].attn", "blocks[0].attn.query"] + [
        "blocks[1]",
        "blocks[1].attn",
        "blocks[1].attn.query",
    ]
    assert "2 module calls match" in root.locator(".nnx-sum-showing").inner_text()
    root.locator("input.nnx-sum-filter").fill("LinearGeneral")  # a class
    assert len(paths(root)) == 1 + 2 * (1 + 1 + 4)
    root.locator("input.nnx-sum-filter").fill("no such module")
    assert paths(root) == [] and root.locator(".nnx-empty").is_visible()
    root.locator("input.nnx-sum-filter").fill("")
    assert paths(root) == [p for p, _, _ in rows]

    # Collapse: a click on a parent's path hides its calls; collapse all leaves the model's calls.
    root.locator(f'{ROW}[data-path="blocks[0]"] td.c-path').click()
    assert root.locator(f'{ROW}[data-path="blocks[0]"]').get_attribute("aria-expanded") == "false"
    assert [p for p in paths(root) if p.startswith("blocks[0].")] == []
    assert "blocks[1].attn.query" in paths(root)
    root.locator("button.nnx-sum-collapse").click()
    assert paths(root) == [p for p, depth, _ in rows if depth <= 1]
    screenshot(page, "summary-lab-collapsed", scroll_to=root)
    root.locator("button.nnx-sum-expand").click()
    # the window redraws its rows on the next frame: a loaded machine may read it a frame early
    assert settled_paths(page, root, [p for p, _, _ in rows]) == [p for p, _, _ in rows]

    # A Summary as a cell's value is the same widget, its peak memory arriving too.
    views = page.locator(".jp-OutputArea-output .nnx-lab-summary-view")
    assert views.count() == 2
    assert settled_paths(page, views.nth(1), [p for p, _, _ in rows]) == [p for p, _, _ in rows]
    views.nth(1).locator(".nnx-sum-head").get_by_text("Peak memory per device").wait_for(timeout=60_000)
    assert not page_events.script_dialogs, page_events.dialogs
    assert not page_events.page_errors, page_events.page_errors
