"""tools/check_docs_links.py, which .ci/run runs on the built documentation site: it must find
each kind of broken link inside a site, and pass a site whose links all resolve."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_docs_links", ROOT / "tools" / "check_docs_links.py")
check_docs_links = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_docs_links)


def _site(tmp_path: Path, links: str) -> Path:
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "index.html").write_text('<a href="docs/index.html">docs</a>')
    (tmp_path / "docs" / "index.html").write_text(
        f'<h1 id="top">nnx_lab</h1><img src="viewer.png">{links}<a href="https://example.org/x#y">out</a>'
    )
    (tmp_path / "docs" / "viewer.png").write_bytes(b"png")
    (tmp_path / "docs" / "guide" / "watch.html").write_text('<section id="use-it"><a name="old"></a></section>')
    return tmp_path


def test_a_site_whose_links_resolve_passes(tmp_path):
    site = _site(
        tmp_path,
        '<a href="guide/watch.html#use-it">a</a><a href="guide/watch.html#old">b</a>'
        '<a href="#top">c</a><a href="guide/">d</a>',
    )
    (site / "docs" / "guide" / "index.html").write_text("<p>guides</p>")
    broken, checked = check_docs_links.check(site)
    assert broken == [] and checked == 6  # 5 in docs/index.html, 1 in the root page; https:// is not followed
    assert check_docs_links.main([str(site)]) == 0


def test_each_kind_of_broken_link_is_named(tmp_path):
    site = _site(
        tmp_path,
        '<a href="guide/missing.html">a</a><a href="guide/watch.html#nowhere">b</a>'
        '<a href="#gone">c</a><a href="../../outside.html">d</a>',
    )
    broken, _ = check_docs_links.check(site)
    assert broken == [
        "docs/index.html: guide/missing.html: no such file",
        "docs/index.html: guide/watch.html#nowhere: no anchor #nowhere in docs/guide/watch.html",
        "docs/index.html: #gone: no anchor #gone in docs/index.html",
        "docs/index.html: ../../outside.html: leaves the site",
    ]
    assert check_docs_links.main([str(site)]) == 1


def test_no_built_site_is_an_error_not_a_pass(tmp_path, capsys):
    assert check_docs_links.main([str(tmp_path)]) == 2
    assert "no built site" in capsys.readouterr().err
