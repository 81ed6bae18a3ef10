"""Check every link inside the built documentation site: each relative ``href``/``src`` of every
HTML page must reach a file of the site, and each ``#anchor`` an element with that id there.

External links (``http:``, ``https:``, ``mailto:`` ...) are not followed: CI has no network, and
Sphinx's ``linkcheck`` builder would need it. Run after the HTML build:

    python tools/check_docs_links.py docs/_build/html

Prints one line per broken link and exits 1 if there is any; else a one-line summary.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name") and (name == "id" or tag == "a"):
                self.ids.add(value)
            elif name == "href" and tag in ("a", "link", "area"):
                self.links.append(value)
            elif name == "src" and tag in ("img", "script", "iframe", "source"):
                self.links.append(value)


def _parse(path: Path, cache: dict[Path, _Page]) -> _Page:
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def check(site: Path) -> tuple[list[str], int]:
    """The broken links of the site at ``site`` (one message each) and how many links were checked."""
    site = site.resolve()
    pages: dict[Path, _Page] = {}
    broken: list[str] = []
    checked = 0
    for html in sorted(site.rglob("*.html")):
        if "_static" in html.relative_to(site).parts:  # the theme's own files
            continue
        for link in _parse(html, pages).links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue  # external: not followed
            checked += 1
            where = f"{html.relative_to(site)}: {link}"
            target = html if not parts.path else (html.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if site not in target.parents and target != site:
                broken.append(f"{where}: leaves the site")
            elif not target.is_file():
                broken.append(f"{where}: no such file")
            elif parts.fragment and target.suffix == ".html":
                if unquote(parts.fragment) not in _parse(target, pages).ids:
                    broken.append(f"{where}: no anchor #{parts.fragment} in {target.relative_to(site)}")
    return broken, checked


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tools/check_docs_links.py BUILT_HTML_DIR", file=sys.stderr)
        return 2
    site = Path(argv[0])
    if not (site / "index.html").is_file():
        print(
            f"check_docs_links: {site} holds no built site (no index.html): build it first",
            file=sys.stderr,
        )
        return 2
    broken, checked = check(site)
    for line in broken:
        print(f"broken link: {line}")
    print(f"check_docs_links: {checked} links inside the site checked, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
