"""What the browser tests read off a rendered widget."""

from __future__ import annotations


def widget_root(page, root_selector: str, row_selector: str):
    """The first output holding `root_selector`, once its first `row_selector` row is visible."""
    root = page.locator(f".jp-OutputArea-output {root_selector}").first
    root.locator(row_selector).first.wait_for(state="visible", timeout=30_000)
    return root


def row_paths(root, row_selector: str) -> list[str]:
    """`data-path` of every rendered row (only the virtualized window is in the DOM)."""
    return root.locator(row_selector).evaluate_all("rows => rows.map(r => r.dataset.path)")


# What a widget's layout leaves out of sight at the width it is given (issue 35): every measure is
# read in the page, after `mouseover` on each cut cell (where a widget puts the full text on hover).
_JS_FIT = """(root) => {
    const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
    const wide = [root, ...root.querySelectorAll('*')]
        .filter((el) => shown(el) && el.scrollWidth > el.clientWidth + 1
            && ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
        .map((el) => ({cls: el.className && String(el.className), scroll: el.scrollWidth, client: el.clientWidth}));
    const headers = Array.from(root.querySelectorAll('th')).filter(shown).map((th) => ({
        col: th.dataset.col || '', text: th.innerText.trim(), title: th.getAttribute('title') || '',
    }));
    const cut = [];
    for (const cell of root.querySelectorAll('td, th')) {
        if (!shown(cell) || cell.scrollWidth <= cell.clientWidth + 1) continue;
        cell.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
        const title = cell.getAttribute('title') || '';
        const text = cell.innerText.trim();
        cut.push({cls: cell.className, text, title, full: title.includes(text.replace(/\\u2026$/, ''))});
    }
    return {root: {scroll: root.scrollWidth, client: root.clientWidth}, wide, headers, cut};
}"""


def fit_report(root) -> dict:
    """How `root` (a widget's root element) fits its output: {root: {scroll, client}, wide: the
    scroll boxes that scroll sideways, headers: every shown <th>'s col/text/title, cut: every shown
    cell whose text is cut, with its title after a hover and whether that title holds the text}."""
    return root.evaluate(_JS_FIT)


def output_width(page, root) -> float:
    """The width of the notebook output holding `root` (JupyterLab's .jp-OutputArea-output)."""
    return root.evaluate("(el) => el.closest('.jp-OutputArea-output, .output_subarea').getBoundingClientRect().width")


def set_output_width(page, root, width: int) -> float:
    """Resize the browser window until the output holding `root` is `width` px wide (JupyterLab's
    output follows the window's width one for one); the classic Notebook's fixed-width page
    (#notebook-container) is set to the width that gives it. Returns the width reached."""
    classic = root.evaluate("(el) => !!el.closest('#notebook-container')")
    for _ in range(4):
        now = output_width(page, root)
        if abs(now - width) < 0.5:
            break
        if classic:
            root.evaluate(
                "(el, d) => { const c = el.closest('#notebook-container');"
                " c.style.width = `${c.getBoundingClientRect().width + d}px`; }",
                width - now,
            )
        else:
            size = page.viewport_size
            page.set_viewport_size({"width": int(round(size["width"] + width - now)), "height": size["height"]})
        page.wait_for_timeout(300)
    page.wait_for_timeout(300)  # ResizeObserver callbacks and the next frame
    return output_width(page, root)


_JS_WRAPPED_CONTROLS = """(root) => [...root.querySelectorAll("button, summary, select")]
  .filter((el) => el.getClientRects().length)
  .filter((el) => {
    const tops = new Set();
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) if (r.width) tops.add(Math.round(r.top));
    }
    return tops.size > 1 || el.scrollHeight > el.clientHeight + 1;
  })
  .map((el) => el.textContent.trim())"""


def wrapped_controls(root) -> list[str]:
    """The labels of `root`'s shown buttons, selects and column pickers that run over more than one
    line or out of their box."""
    return root.evaluate(_JS_WRAPPED_CONTROLS)
