"""The split report widget in a real browser: filter columns, marks, problems, code, table filter, XSS, theme."""

from __future__ import annotations

import re

from . import pages
from .test_quickstart_browser import assert_readable, open_in_dark_theme, write_notebook

EVIL_KEY = "<img src=x onerror=alert(1)>"
FILTERS = "nnx.Param, nnx.Variable, nnx.PathContains('nothing')"

MODEL = (
    "class Net(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.linear = nnx.Linear(4, 8, rngs=rngs)\n"
    "        self.bn = nnx.BatchNorm(8, rngs=rngs)\n"
    f"        self.d = nnx.Dict({{{EVIL_KEY!r}: nnx.Param(jnp.ones(2))}})\n\n"
    "model = Net(nnx.Rngs(0))"
)
SETUP = (
    "import jax.numpy as jnp\nfrom flax import nnx\n"
    "from nnx_lab.core.split import split_report\nfrom nnx_lab.widgets.split import SplitReportView",
    MODEL,
    f"SplitReportView(split_report(model, {FILTERS}), target='model')",
)
PARAMS = ["d['<img src=x onerror=alert(1)>']", "linear.bias", "linear.kernel", "bn.bias", "bn.scale"]
BATCH_STATS = ["bn.mean", "bn.var"]


def expected_report():
    """The same report, computed here: what the widget must show (labels come from split_report)."""
    import jax.numpy as jnp
    from flax import nnx

    from nnx_lab.core.split import split_report

    scope = {"nnx": nnx, "jnp": jnp}
    exec(MODEL, scope)
    return eval(f"split_report(model, {FILTERS})", {**scope, "split_report": split_report})


def split_view(page):
    return pages.widget_root(page, ".nnx-lab-split-view", "tr.nnx-split-row")


def row_paths(root) -> list[str]:
    return pages.row_paths(root, "tr.nnx-split-row")


def assert_report_rendered(root, labels: list[str] | None = None):
    """The widget shows the expected report; `labels`: the filters as the magic got them (its source text)."""
    report = expected_report()
    labels = labels or [f.label for f in report.filters]
    code = f"graphdef, param, variable, nothing = nnx.split(model, {', '.join(labels)})"
    headers = root.locator("th.nnx-split-filter")
    assert headers.count() == 3
    assert [headers.nth(i).get_attribute("data-filter") for i in range(3)] == ["0", "1", "2"]
    for i, f in enumerate(report.filters):
        assert headers.nth(i).locator(".nm").inner_text() == f.name
        assert headers.nth(i).locator(".lb").inner_text() == labels[i]
    assert sorted(row_paths(root)) == sorted(PARAMS + BATCH_STATS)

    # Params: taken by nnx.Param (filled, column 0), matched by nnx.Variable too (hollow, column 1).
    for path in PARAMS:
        row = root.locator(f'tr.nnx-split-row[data-path="{path}"]')
        assert "shadowed" in row.get_attribute("class"), path
        assert row.locator("td.f-0 .nnx-mark.taken").count() == 1, path
        assert row.locator("td.f-1 .nnx-mark.shadowed").count() == 1, path
    # BatchStats: taken by nnx.Variable.
    for path in BATCH_STATS:
        row = root.locator(f'tr.nnx-split-row[data-path="{path}"]')
        assert "shadowed" not in row.get_attribute("class"), path
        assert row.locator("td.f-0 .nnx-mark").count() == 0, path
        assert row.locator("td.f-1 .nnx-mark.taken").count() == 1, path
    assert root.locator("td.f-2 .nnx-mark").count() == 0  # PathContains('nothing') took nothing
    assert root.locator(".nnx-mark.taken").count() == 7
    assert root.locator(".nnx-mark.shadowed").count() == 5

    problems = root.locator("ul.nnx-split-problems > li:not(.more)").all_inner_texts()
    assert any("took nothing" in p for p in problems), problems
    if report.remainder:
        assert any("add `...`" in p for p in problems), problems
    else:  # nnx.Variable matches every Variable: no remainder column
        assert root.locator("th.nnx-split-rest, tr.remainder").count() == 0

    shown = root.locator(".nnx-split-code code").inner_text()
    assert shown == code, shown
    assert "nnx.split(model, nnx.Param, nnx.Variable, " in shown
    return report


def test_split_report_in_jupyterlab(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "split.ipynb", *SETUP)
    open_notebook(page, jupyter_server, nb, ui="lab")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=jupyter_server.base_url)
    run_all_cells(page)
    root = split_view(page)
    report = assert_report_rendered(root)
    head = root.locator(".nnx-split-head").inner_text()
    assert re.search(r"Net\s*·\s*7 Variables\s*·\s*3 filters", head), head
    screenshot(page, "split-lab", scroll_to=root)

    # The XSS key is literal text, nothing ran, nothing was parsed as HTML.
    assert f"d['{EVIL_KEY}']" in root.inner_text()
    assert root.locator("img, script, [onerror]").count() == 0, root.inner_html()[:2000]
    assert page.locator('img[src="x"]').count() == 0
    assert not page_events.script_dialogs, page_events.dialogs

    # Clicking a filter header shows only the Variables it matched; clicking it again shows all.
    root.locator('th.nnx-split-filter[data-filter="0"]').click()
    assert sorted(row_paths(root)) == sorted(PARAMS)
    assert root.locator('th.nnx-split-filter[data-filter="0"]').get_attribute("aria-pressed") == "true"
    screenshot(page, "split-lab-filtered", scroll_to=root)
    root.locator('th.nnx-split-filter[data-filter="2"]').click()
    assert row_paths(root) == []
    assert root.locator(".nnx-empty").is_visible()
    root.locator('th.nnx-split-filter[data-filter="2"]').click()
    assert len(row_paths(root)) == 7

    # Copy: the clipboard gets the equivalent Python line.
    root.locator("button.nnx-split-copy").click()
    page.wait_for_function("() => document.querySelector('.nnx-split-copy').textContent !== 'copy'", timeout=5_000)
    assert root.locator("button.nnx-split-copy").inner_text() == "copied"
    assert page.evaluate("() => navigator.clipboard.readText()") == report.code("model")
    assert not page_events.script_dialogs, page_events.dialogs
    assert not page_events.page_errors, page_events.page_errors


def test_nnx_split_magic_shows_the_same_widget(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(
        tmp_path / "split_magic.ipynb",
        SETUP[0] + "\n%load_ext nnx_lab",
        MODEL,
        f"%nnx_split model {FILTERS.replace(', ', ' ')}",
        "print('bound:', type(graphdef).__name__, len(nnx.to_flat_state(param)), len(nnx.to_flat_state(variable)))",
    )
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = split_view(page)
    # The magic passes the filters' source text as labels, so the line reads as the user typed it.
    assert_report_rendered(root, labels=["nnx.Param", "nnx.Variable", "nnx.PathContains('nothing')"])
    assert root.locator(".nnx-split-code code").inner_text() == (
        "graphdef, param, variable, nothing = nnx.split(model, nnx.Param, nnx.Variable, nnx.PathContains('nothing'))"
    )
    assert page.locator(".jp-OutputArea-output").get_by_text("bound: GraphDef 5 2").count() == 1
    assert f"d['{EVIL_KEY}']" in root.inner_text()
    assert root.locator("img, script, [onerror]").count() == 0
    screenshot(page, "split-lab-magic", scroll_to=root)
    assert not page_events.script_dialogs, page_events.dialogs


def test_split_report_dark_theme(page, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path):
    nb = write_notebook(tmp_path / "split_dark.ipynb", *SETUP)
    open_in_dark_theme(page, jupyter_server, open_notebook, nb)
    run_all_cells(page)
    root = split_view(page)
    assert_readable(
        root,
        (
            'tr.nnx-split-row[data-path="bn.mean"] .c-path',
            'th[data-col="path"]',
            ".nnx-split-code code",
            "ul.nnx-split-problems > li",
            ".nnx-split-head .root",
        ),
    )
    screenshot(page, "split-lab-dark", scroll_to=root)


def test_split_report_remainder_and_a_large_model(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(
        tmp_path / "split_more.ipynb",
        SETUP[0],
        "partial = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(0)),\n"
        "                         nnx.Dropout(0.1, rngs=nnx.Rngs(1)))\n"
        "SplitReportView(split_report(partial, nnx.Param, nnx.BatchStat), target='partial')",
        "class Big(nnx.Module):\n"
        "    def __init__(self, n):\n"
        "        self.ps = nnx.List([nnx.Param(jnp.zeros(4)) for _ in range(n // 2)])\n"
        "        self.bs = nnx.List([nnx.BatchStat(jnp.zeros(4)) for _ in range(n // 2)])\n\n"
        "big = Big(10_000)\n"
        "SplitReportView(split_report(big, nnx.Param, nnx.Variable), target='big')",
    )
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    views = page.locator(".jp-OutputArea-output .nnx-lab-split-view")
    views.nth(1).locator("tr.nnx-split-row").first.wait_for(state="visible", timeout=30_000)
    assert views.count() == 2

    # Not exhaustive: the RNG Variables of the Dropout are the remainder.
    root = views.nth(0)
    rest = sorted(root.locator("tr.nnx-split-row.remainder").evaluate_all("rows => rows.map(r => r.dataset.path)"))
    assert rest == ["layers[2].rngs.count", "layers[2].rngs.key"], rest
    assert root.locator("th.nnx-split-rest").count() == 1
    assert root.locator("td.c-rest .nnx-mark.rest").count() == 2
    problems = root.locator("ul.nnx-split-problems > li").all_inner_texts()
    assert any("add `...`" in p for p in problems), problems
    assert root.locator(".nnx-split-code code").inner_text() == (
        "graphdef, param, batch_stat = nnx.split(partial, nnx.Param, nnx.BatchStat)"
    )
    screenshot(page, "split-lab-remainder", scroll_to=root)
    root.locator("th.nnx-split-rest").click()
    assert sorted(row_paths(root)) == rest

    # 10 000 Variables: a window of rows in the DOM, a capped problems list; scrolling moves the window.
    big = views.nth(1)
    assert big.locator("tr.nnx-split-row").count() < 100
    assert big.locator("ul.nnx-split-problems > li").count() <= 13
    scroller = big.locator(".nnx-scroll")
    scroller.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_function(
        """() => { const v = document.querySelectorAll('.nnx-lab-split-view')[1];
                   return Array.from(v.querySelectorAll('tr.nnx-split-row')).some(r => r.dataset.path === 'ps[4999]'); }""",
        timeout=5_000,
    )
    assert big.locator("tr.nnx-split-row").count() < 100
    last = big.locator('tr.nnx-split-row[data-path="ps[4999]"]')
    assert last.is_visible()
    screenshot(page, "split-lab-10k-scrolled", scroll_to=big)
    assert not page_events.script_dialogs and not page_events.page_errors, (
        page_events.dialogs,
        page_events.page_errors,
    )
