"""The view panel and mode toggle fit the output they are given (issue 35), on an encoder-decoder
like flax's translation Transformer (three MultiHeadAttention, each with four set_view arguments,
and a Dropout; its `nnx.view` train/eval views): at output widths of 360 px (an 800 px JupyterLab
window with the file browser open), 800 and 1048 px, every argument's help is read in lines of
words (not one character per line), no header overlaps the next one or is cut without its name on
hover, every value (`True`, `False`) is read whole, and only the instance list scrolls sideways,
under a sticky path column."""

from __future__ import annotations

import os
from pathlib import Path

from . import pages
from .test_quickstart_browser import write_notebook

WIDTHS = (1048, 800, 360)
SHOTS = Path(os.environ.get("NNX_LAB_SHOTS", "/work/shots"))

CELLS = (
    "from flax import nnx\nimport nnx_lab\n%load_ext nnx_lab",
    "class Encoder(nnx.Module):\n"
    "    def __init__(self, d, rngs):\n"
    "        self.attention = nnx.MultiHeadAttention(4, d, decode=False, rngs=rngs)\n\n"
    "class Decoder(nnx.Module):\n"
    "    def __init__(self, d, rngs):\n"
    "        self.attention_1 = nnx.MultiHeadAttention(4, d, decode=False, rngs=rngs)\n"
    "        self.attention_2 = nnx.MultiHeadAttention(4, d, decode=False, rngs=rngs)\n\n"
    "class TransformerModel(nnx.Module):\n"
    "    def __init__(self, d, rngs):\n"
    "        self.encoder = Encoder(d, rngs)\n"
    "        self.decoder = Decoder(d, rngs)\n"
    "        self.dropout = nnx.Dropout(0.5, rngs=rngs)\n\n"
    "model = TransformerModel(16, nnx.Rngs(0))\n"
    "eval_model = nnx.view(model, deterministic=True)",
    "nnx_lab.view_panel(model)",
    "nnx_lab.mode_toggle(eval_model)",
)

# Per shown element of the panel: the help texts' widths, the headers and values that do not fit
# their cells, and the instance lists that scroll sideways with whether their path cells stick.
_JS_VIEWS = """(root) => {
    const shown = (el) => el.getClientRects().length > 0;
    const cut = (el) => el.scrollWidth > el.clientWidth + 1;
    return {
        helps: [...root.querySelectorAll('.nnx-views-arg .help')].filter(shown)
            .map((el) => ({text: el.innerText, width: el.getBoundingClientRect().width})),
        heads: [...root.querySelectorAll('table.nnx-views-table th')].filter(shown)
            .map((th) => ({text: th.innerText, cut: cut(th), title: th.getAttribute('title') || ''})),
        values: [...root.querySelectorAll('td.c-val')].filter(shown).filter(cut).map((td) => td.innerText),
        lists: [...root.querySelectorAll('.nnx-views-list')].filter(shown).map((el) => ({
            sideways: el.scrollWidth > el.clientWidth + 1,
            sticky: [...el.querySelectorAll('td.c-path')].every((td) => getComputedStyle(td).position === 'sticky'),
        })),
    };
}"""


def problems(name: str, width: int, root) -> list[str]:
    where = f"{name} at {width} px"
    found = []
    fit = pages.fit_report(root)
    if fit["root"]["scroll"] > fit["root"]["client"]:
        found.append(f"{where}: the panel is wider than its output {fit['root']}")
    got = root.evaluate(_JS_VIEWS)
    for help_ in got["helps"]:
        if help_["width"] < 120:  # about 20 characters: below that a sentence breaks inside its words
            found.append(f"{where}: an argument's help is {help_['width']:.0f} px wide: {help_['text'][:40]!r}")
    for head in got["heads"]:
        if head["cut"] and head["text"] not in head["title"]:
            found.append(f"{where}: header {head['text']!r} does not fit and its name is not on hover")
    found += [f"{where}: a value is cut: {v!r}" for v in got["values"]]
    for box in got["lists"]:
        if box["sideways"] and not box["sticky"]:
            found.append(f"{where}: the instance list scrolls sideways but its paths do not stay")
    found += [f"{where}: a control's label wraps: {c!r}" for c in pages.wrapped_controls(root)]
    return found


def test_view_panel_and_mode_toggle_fit_360_800_and_1048_px(
    page, page_events, jupyter_server, open_notebook, run_all_cells, tmp_path
):
    page.set_viewport_size({"width": 1500, "height": 1000})
    nb = write_notebook(tmp_path / "fit_views.ipynb", *CELLS)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    roots = {}
    for variant in ("views", "modes"):
        root = page.locator(f'.jp-OutputArea-output .nnx-lab-views[data-variant="{variant}"]').first
        root.locator(".nnx-views-instance").first.wait_for(state="visible", timeout=30_000)
        roots[variant] = root
    assert roots["views"].locator(".nnx-views-arg").count() == 4  # deterministic, decode, batch_size, max_length

    SHOTS.mkdir(parents=True, exist_ok=True)
    found: list[str] = []
    heights = {}
    for width in WIDTHS:
        reached = pages.set_output_width(page, roots["views"], width)
        assert abs(reached - width) < 1, reached
        for name, root in roots.items():
            root.scroll_into_view_if_needed()
            page.wait_for_timeout(200)
            found += problems(name, width, root)
            heights[(name, width)] = root.evaluate("(r) => r.getBoundingClientRect().height")
            page.mouse.move(2, 2)
            root.screenshot(path=str(SHOTS / f"views-{name}-lab-{width}.png"))
    assert not found, "\n".join(found)
    # narrow, the form is a few lines taller, not a column of single characters
    assert heights[("views", 360)] < 2 * heights[("views", 1048)], heights
    assert not page_events.page_errors, page_events.page_errors
