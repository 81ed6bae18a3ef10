"""Every widget stays readable in dark themes (issue 39, part 1).

One notebook renders the viewer (nnx_lab.watch, with a stacked Variable's heatmap open), summary,
compare, capture panel, split report, view panel, memory and non-finite widgets, then each widget is
measured in three hosts on the same page:

- JupyterLab with the "JupyterLab Dark" theme (a user setting of @jupyterlab/apputils-extension:themes);
- VS Code's Dark+: the --jp-* variables made undefined on the outputs (as in VS Code's notebook
  webview, which has none) and VS Code's --vscode-* variables of Dark+ set instead;
- a host with no theme variables in a dark colour scheme (Colab's dark mode, whose output frames
  define neither --jp-* nor --vscode-*): --jp-* undefined and prefers-color-scheme: dark emulated.

In each, every visible text node must reach WCAG AA contrast against what is painted under it
(4.5:1, 3:1 for large text), computed from computed styles: the text colour (SVG text: its fill)
alpha-composited over the background colours of the elements under the text's centre, from its own
element down to the first opaque one. Chart strokes (sparklines), the heatmap's cells and the bars
need 3:1 against their background, and no box inside a widget may be light (a "white box").
Screenshots of the viewer, summary, compare and capture widgets go to $NNX_LAB_SHOTS (/work/shots)
as dark-<widget>.png and dark-<widget>-800.png (and the viewer's as dark-viewer-vscode.png and
dark-viewer-nohost.png); the offenders, if any, to dark-offenders.txt. The test fails on the styles
before issue 39 (285 offenders, e.g. JupyterLab Dark's --jp-ui-font-color2 on --jp-layout-color2 at
4.2:1, viridis' purple end at 1.1:1, white boxes with no host variables).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import pages
from .test_quickstart_browser import write_notebook

SHOTS = Path(os.environ.get("NNX_LAB_SHOTS", "/work/shots"))
THEME_PLUGIN = "@jupyterlab/apputils-extension:themes"

CELLS = (
    "import jax, jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab\n%load_ext nnx_lab",
    "class Net(nnx.Module):\n"
    "    def __init__(self, out=2, extra=False, seed=0):\n"
    "        make = nnx.vmap(lambda key: nnx.Linear(4, 4, rngs=nnx.Rngs(key)), in_axes=0, out_axes=0)\n"
    "        self.blocks = make(jax.random.split(jax.random.key(seed), 3))\n"
    "        rngs = nnx.Rngs(seed)\n"
    "        self.norm = nnx.LayerNorm(4, rngs=rngs)\n"
    "        self.bn = nnx.BatchNorm(4, rngs=rngs)\n"
    "        self.drop = nnx.Dropout(0.5, rngs=rngs)\n"
    "        if extra:\n"
    "            self.adapter = nnx.Linear(4, 4, rngs=rngs)\n"
    "        self.head = nnx.Linear(4, out, rngs=rngs)\n\n"
    "    def __call__(self, x):\n"
    "        for i in range(3):\n"
    "            x = x + nnx.relu(x @ self.blocks.kernel[i] + self.blocks.bias[i])\n"
    "        self.sow(nnx.Intermediate, 'hidden', x)\n"
    "        x = self.perturb('hidden_grad', x)\n"
    "        return self.head(self.drop(self.bn(self.norm(x))))\n\n"
    "class Faulty(nnx.Module):\n"
    "    def __init__(self):\n"
    "        self.linear = nnx.Linear(4, 4, rngs=nnx.Rngs(0))\n\n"
    "    def __call__(self, x):\n"
    "        return jnp.log(self.linear(x))\n\n"
    "model = Net()\nx = jnp.linspace(-1, 1, 8 * 4).reshape(8, 4)",
    "viewer = nnx_lab.watch(model, layers={'blocks': 0})",
    "for _ in viewer.track(range(3)):\n    model.head.kernel[...] = model.head.kernel[...] * 1.5",
    "%nnx_summary model (8, 4) --grad --no-memory",
    "nnx_lab.compare(model, Net(out=3, extra=True, seed=1))",
    "panel = nnx_lab.capture_panel(model)\ny = panel(x)\nres = panel.grads(lambda m, x: (m(x) ** 2).mean(), x)",
    "%nnx_split model nnx.Param nnx.BatchStat ...",
    "nnx_lab.view_panel(model)",
    "grads = nnx.grad(lambda m: m(x).mean())(model)\nnnx_lab.memory()",
    "nnx_lab.find_nonfinite(lambda m, x: m(x).mean(), Faulty(), x)",
)
# widget -> (its root in the output, an element that says it has drawn)
WIDGETS = {
    "viewer": (".nnx-lab-viewer", ".nnx-row"),
    "summary": (".nnx-lab-summary-view", "tr.nnx-sum-row"),
    "compare": (".nnx-lab-compare", "tr.nnx-cmp-row"),
    "capture": (".nnx-lab-capture", "tr.nnx-capture-row"),
    "split": (".nnx-lab-split-view", "tr.nnx-split-row"),
    "views": (".nnx-lab-views", ".nnx-views-instance"),
    "memory": (".nnx-lab-memory-view", "tr.nnx-mem-row"),
    "nonfinite": (".nnx-lab-nonfinite-view", "tr.nnx-nf-call"),
}
SHOT_WIDGETS = ("viewer", "summary", "compare", "capture")

# VS Code's Dark+ theme (Default Dark+), the variables styles.js falls back on.
VSCODE_DARK_PLUS = {
    "--vscode-editor-foreground": "#cccccc",
    "--vscode-editor-background": "#1f1f1f",
    "--vscode-descriptionForeground": "#9d9d9d",
    "--vscode-disabledForeground": "rgba(204, 204, 204, 0.5)",
    "--vscode-sideBar-background": "#181818",
    "--vscode-panel-border": "#2b2b2b",
    "--vscode-focusBorder": "#0078d4",
    "--vscode-textLink-foreground": "#3794ff",
    "--vscode-button-background": "#0e639c",
    "--vscode-errorForeground": "#f85149",
    "--vscode-testing-iconPassed": "#73c991",
    "--vscode-editorWarning-foreground": "#cca700",
    "--vscode-font-family": "system-ui, 'Ubuntu', 'Droid Sans', sans-serif",
    "--vscode-editor-font-family": "'Droid Sans Mono', monospace",
}

# The measure, in the page: returns one line per offender.
_JS_CONTRAST = r"""([root, dark]) => {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 1;
    const ctx = canvas.getContext('2d', {willReadFrequently: true});
    const parse = (str) => {
        const m = /^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/.exec(str || '');
        if (m) return [+m[1], +m[2], +m[3], m[4] === undefined ? 1 : +m[4]];
        if (!str || str === 'none' || str === 'transparent') return [0, 0, 0, 0];
        ctx.clearRect(0, 0, 1, 1);
        ctx.fillStyle = '#000'; ctx.fillStyle = str;
        ctx.fillRect(0, 0, 1, 1);
        const d = ctx.getImageData(0, 0, 1, 1).data;
        return [d[0], d[1], d[2], d[3] / 255];
    };
    const over = (top, under) => [0, 1, 2].map((k) => top[k] * top[3] + under[k] * (1 - top[3])).concat([1]);
    const lum = (c) => {
        const [r, g, b] = c.slice(0, 3).map((v) => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const ratio = (a, b) => {
        const [x, y] = [lum(a), lum(b)];
        return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
    };
    // An element's own paint: its background colour, under a one-colour gradient (table stripes).
    const layers = (el) => {
        const cs = getComputedStyle(el);
        const out = [];
        const img = cs.backgroundImage;
        if (img && img.startsWith('linear-gradient')) {
            const cols = img.match(/rgba?\([^)]*\)/g) || [];
            if (cols.length && cols.every((c) => c === cols[0])) out.push(parse(cols[0]));
        }
        out.push(parse(cs.backgroundColor));
        return out;
    };
    const canvasBg = () => {
        for (const el of [document.body, document.documentElement]) {
            const c = parse(getComputedStyle(el).backgroundColor);
            if (c[3] > 0) return over(c, [255, 255, 255, 1]);
        }
        return [255, 255, 255, 1];
    };
    // Composite a stack of elements (topmost first) down to the first opaque layer.
    const composite = (stack) => {
        const ls = [];
        for (const el of stack) {
            for (const l of layers(el)) {
                if (l[3] > 0) ls.push(l);
                if (l[3] >= 1) return ls.reverse().reduce((acc, l2) => over(l2, acc), [0, 0, 0, 1]);
            }
        }
        return ls.reverse().reduce((acc, l2) => over(l2, acc), canvasBg());
    };
    const ancestors = (el) => { const out = []; for (let e = el; e; e = e.parentElement) out.push(e); return out; };
    const opacity = (el) => ancestors(el).reduce((o, e) => o * +getComputedStyle(e).opacity, 1);
    const hex = (c) => '#' + c.slice(0, 3).map((v) => Math.round(v).toString(16).padStart(2, '0')).join('');
    const describe = (el) => {
        const cls = el.getAttribute('class') || '';
        return el.tagName.toLowerCase() + (cls ? '.' + cls.trim().split(/\s+/).join('.') : '');
    };
    const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility === 'visible';
    const vw = innerWidth, vh = innerHeight;
    const found = [];
    let texts = 0, graphics = 0;

    // Text: every non-blank text node whose centre is on screen and not covered by something else.
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const text = node.textContent.trim();
        const el = node.parentElement;
        if (!text || !el || !shown(el) || el.closest('option, :disabled, [aria-disabled="true"]')) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        const rect = Array.from(range.getClientRects()).find((r) => r.width > 1 && r.height > 1);
        if (!rect) continue;
        const cx = rect.left + Math.min(rect.width / 2, 6), cy = rect.top + rect.height / 2;
        if (cx < 0 || cy < 0 || cx >= vw || cy >= vh) continue;
        const stack = document.elementsFromPoint(cx, cy);
        const at = stack.indexOf(el);
        if (at < 0 || (at > 0 && !stack.slice(0, at).every((e) => el.contains(e)))) continue;  // covered, or clipped away
        texts++;
        const cs = getComputedStyle(el);
        const colour = parse(el instanceof SVGElement ? cs.fill : cs.color);
        colour[3] *= opacity(el);
        const bg = composite(stack.slice(at));
        const fg = over(colour, bg);
        const size = parseFloat(cs.fontSize), weight = parseInt(cs.fontWeight, 10) || 400;
        const need = size >= 24 || (size >= 18.66 && weight >= 700) ? 3 : 4.5;
        const r = ratio(fg, bg);
        if (r < need) found.push(`text ${JSON.stringify(text.slice(0, 40))} in ${describe(el)}: ${hex(fg)} on ${hex(bg)} = ${r.toFixed(2)}:1 < ${need}:1`);
    }

    // Graphics: sparkline strokes, heatmap cells, bars, 3:1 against the background they sit on.
    const marks = [
        ...root.querySelectorAll('svg path, svg line, svg polyline, svg rect, svg circle'),
        ...root.querySelectorAll('.bar, .nnx-bar > span:not(.peak), .nnx-cmp-bar > span'),
    ];
    for (const el of marks) {
        if (!shown(el) || (!dark && el.closest('.nnx-heatmap'))) continue;
        const box = el.getBoundingClientRect();
        if (box.width === 0 && box.height === 0) continue;
        const cs = getComputedStyle(el);
        let colour;
        if (el instanceof SVGElement) {
            const stroke = parse(cs.stroke);
            const useStroke = stroke[3] > 0 && parseFloat(cs.strokeWidth) > 0 && el.tagName !== 'rect';
            colour = useStroke ? stroke : parse(cs.fill);
            colour[3] *= +(useStroke ? cs.strokeOpacity : cs.fillOpacity);
        } else {
            colour = layers(el)[layers(el).length - 1];
        }
        if (colour[3] === 0) continue;
        graphics++;
        colour[3] *= opacity(el);
        const host = el instanceof SVGElement ? el.ownerSVGElement.parentElement : el.parentElement;
        const bg = composite(ancestors(host));
        const r = ratio(over(colour, bg), bg);
        if (r < 3) found.push(`mark ${describe(el)}: ${hex(over(colour, bg))} on ${hex(bg)} = ${r.toFixed(2)}:1 < 3:1`);
    }

    // White boxes: in a dark host, nothing inside the widget paints a light surface.
    if (dark) {
        for (const el of [root, ...root.querySelectorAll('*')]) {
            if (el instanceof SVGElement || !shown(el)) continue;
            const own = layers(el)[layers(el).length - 1];
            if (own[3] === 0) continue;
            const box = el.getBoundingClientRect();
            if (box.width < 12 || box.height < 8) continue;
            const bg = composite(ancestors(el));
            if (lum(bg) > 0.3) found.push(`light box ${describe(el)} ${Math.round(box.width)}x${Math.round(box.height)}: ${hex(bg)}`);
        }
    }
    return {found, texts, graphics};
}"""


def _jp_variables(page) -> list[str]:
    """Every --jp-* custom property the widgets' style sheets name."""
    return page.evaluate(
        """() => {
        const names = new Set();
        for (const s of document.querySelectorAll('style')) {
            if (!/\\.nnx-lab-|\\.nnx-heatmap/.test(s.textContent)) continue;
            for (const m of s.textContent.matchAll(/var\\((--jp-[\\w-]+)/g)) names.add(m[1]);
        }
        return [...names].sort();
    }"""
    )


def _host(page, css: str, body_class: str = "") -> None:
    """Make the page look like another host to the widgets: `css` in a style sheet, JupyterLab's theme
    attributes taken off <body> (kept aside in data-nnx-test-*), `body_class` on it instead."""
    page.evaluate(
        """([css, cls]) => {
        let s = document.getElementById('nnx-test-host');
        if (!s) { s = document.createElement('style'); s.id = 'nnx-test-host'; document.head.appendChild(s); }
        s.textContent = css;
        const b = document.body;
        for (const a of ['data-jp-theme-name', 'data-jp-theme-light']) {
            if (b.hasAttribute(a)) { b.setAttribute('data-nnx-test-' + a, b.getAttribute(a)); b.removeAttribute(a); }
        }
        b.classList.remove('vscode-dark');
        if (cls) b.classList.add(cls);
    }""",
        [css, body_class],
    )


def _measure(page, roots: dict, host: str, dark: bool = True) -> list[str]:
    page.mouse.move(2, 2)  # no row :hover-tinted
    offenders = []
    for name, root in roots.items():
        root.scroll_into_view_if_needed()
        page.wait_for_timeout(250)  # the windowed tables draw the rows that scrolled in
        result = root.evaluate(f"(el) => ({_JS_CONTRAST})([el, {'true' if dark else 'false'}])")
        print(
            f"{host} {name}: {result['texts']} text nodes, {result['graphics']} marks, {len(result['found'])} offenders"
        )
        assert result["texts"] >= 5, f"{host} {name}: only {result['texts']} text nodes measured"
        offenders += [f"{host} {name}: {line}" for line in dict.fromkeys(result["found"])]
    return offenders


def _shoot(page, roots: dict, name: str) -> None:
    """Screenshots of SHOT_WIDGETS to $NNX_LAB_SHOTS/<name, the widget in its {}>.png."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for widget in SHOT_WIDGETS:
        roots[widget].scroll_into_view_if_needed()
        page.mouse.move(2, 2)
        roots[widget].screenshot(path=str(SHOTS / f"{name.format(widget)}.png"))


def _assert_none_below_aa(offenders: list[str], filename: str) -> None:
    """The offenders to $NNX_LAB_SHOTS/filename; none may be left."""
    report = "\n".join(offenders)
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / filename).write_text(report + "\n")
    assert not offenders, f"{len(offenders)} below WCAG AA:\n" + report


def _every_widget_drawn(page, run_all_cells) -> dict:
    """Run the notebook's cells; each widget's root once it has drawn, with the viewer's heatmap of the
    stacked blocks open and the sparklines of the tracked loop drawn."""
    run_all_cells(page)
    roots = {name: pages.widget_root(page, sel, row) for name, (sel, row) in WIDGETS.items()}
    roots["capture"].locator("th[data-col=gmean]").wait_for(state="attached", timeout=30_000)
    roots["viewer"].locator('.nnx-row.nnx-group[data-path="blocks.kernel"] button.nnx-heat').click()
    roots["viewer"].locator(".nnx-heatmap rect").first.wait_for(state="visible", timeout=10_000)
    roots["viewer"].locator(".c-spark path").first.wait_for(state="attached", timeout=30_000)
    return roots


def test_every_widget_reads_at_wcag_aa_in_dark_themes(
    page, page_events, jupyter_server, open_notebook, run_all_cells, tmp_path
):
    page.set_viewport_size({"width": 1500, "height": 1000})
    nb = write_notebook(tmp_path / "dark_theme.ipynb", *CELLS)
    with jupyter_server.user_setting(THEME_PLUGIN, {"theme": "JupyterLab Dark"}):
        open_notebook(page, jupyter_server, nb, ui="lab")
        page.wait_for_function("() => document.body.dataset.jpThemeName === 'JupyterLab Dark'", timeout=30_000)
        assert page.evaluate("() => document.body.dataset.jpThemeLight") == "false"
        roots = _every_widget_drawn(page, run_all_cells)
        offenders = _measure(page, roots, "JupyterLab Dark")

        _shoot(page, roots, "dark-{}")
        reached = pages.set_output_width(page, roots["summary"], 800)
        assert abs(reached - 800) < 1, reached
        offenders += _measure(page, roots, "JupyterLab Dark at 800 px")
        _shoot(page, roots, "dark-{}-800")

        # VS Code: no --jp-* variables in its webview, its --vscode-* ones instead, body.vscode-dark.
        unset = "".join(f"{v}:initial;" for v in _jp_variables(page))
        assert "--jp-layout-color1:initial;" in unset and "--jp-ui-font-color1:initial;" in unset, unset
        vscode = "".join(f"{k}:{v};" for k, v in VSCODE_DARK_PLUS.items())
        _host(page, f".jp-OutputArea-output{{{unset}{vscode}background:#1f1f1f;color:#cccccc}}", "vscode-dark")
        offenders += _measure(page, roots, "VS Code Dark+")
        roots["viewer"].scroll_into_view_if_needed()
        roots["viewer"].screenshot(path=str(SHOTS / "dark-viewer-vscode.png"))

        # Colab's dark mode: no theme variables, no theme attribute or class, a dark colour scheme.
        page.emulate_media(color_scheme="dark")
        _host(page, f".jp-OutputArea-output{{{unset}background:#1f1f1f;color:#e3e3e3}}")
        offenders += _measure(page, roots, "no host variables, prefers dark")
        roots["viewer"].scroll_into_view_if_needed()
        roots["viewer"].screenshot(path=str(SHOTS / "dark-viewer-nohost.png"))

    _assert_none_below_aa(offenders, "dark-offenders.txt")
    assert not page_events.page_errors, page_events.page_errors


def test_every_widget_reads_at_wcag_aa_in_jupyterlab_light(
    page, page_events, jupyter_server, open_notebook, run_all_cells, tmp_path
):
    """The same measure in JupyterLab's default light theme (what most users see), at full width and
    at 800 px: every text at AA, the bars, sparklines and heatmap cells at 3:1."""
    page.set_viewport_size({"width": 1500, "height": 1000})
    nb = write_notebook(tmp_path / "light_theme.ipynb", *CELLS)
    open_notebook(page, jupyter_server, nb, ui="lab")
    assert page.evaluate("() => document.body.dataset.jpThemeLight") == "true"
    roots = _every_widget_drawn(page, run_all_cells)
    offenders = _measure(page, roots, "JupyterLab Light", dark=False)
    _shoot(page, roots, "light-{}")
    reached = pages.set_output_width(page, roots["summary"], 800)
    assert abs(reached - 800) < 1, reached
    offenders += _measure(page, roots, "JupyterLab Light at 800 px", dark=False)
    _assert_none_below_aa(offenders, "light-offenders.txt")
    assert not page_events.page_errors, page_events.page_errors
