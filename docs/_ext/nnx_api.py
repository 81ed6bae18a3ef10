"""The API page's entries, generated so that the page cannot fall behind the code.

``.. nnx-api::`` documents every name in ``nnx_lab.__all__`` (autodoc: a class with its public
members, a function with its signature); ``.. nnx-magics::`` every magic that
``%load_ext nnx_lab`` registers, with its options as ``%magic?`` prints them (the
``magic_arguments`` parser's help), and the configurable defaults of ``NnxLabMagics``.
"""

from __future__ import annotations

import inspect
import textwrap

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def _title(text: str, underline: str) -> list[str]:
    return [text, underline * len(text), ""]


def _help(parser) -> list[str]:
    """The help ``%magic?`` prints, without the RST ``::`` IPython puts before the usage lines."""
    lines = parser.format_help().splitlines()
    while lines and lines[0].strip() in ("::", ""):
        lines.pop(0)
    end = lines.index("") if "" in lines else len(lines)
    return textwrap.dedent("\n".join(lines[:end])).splitlines() + lines[end:]


class _Generated(SphinxDirective):
    def lines(self) -> list[str]:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(self.lines(), source="nnx_api.py"), node)
        return node.children


class NnxApi(_Generated):
    """Every public name, in ``nnx_lab.__all__``'s order."""

    def lines(self) -> list[str]:
        import nnx_lab

        out: list[str] = []
        for name in nnx_lab.__all__:
            obj = getattr(nnx_lab, name)
            out += _title(f"``{name}``", "~")
            if inspect.isclass(obj):
                out += [f".. autoclass:: nnx_lab.{name}", "   :members:", ""]
            else:
                out += [f".. autofunction:: nnx_lab.{name}", ""]
        return out


class NnxMagics(_Generated):
    """Every magic of ``NnxLabMagics`` with its ``magic_arguments`` help, then its configurables."""

    def lines(self) -> list[str]:
        from nnx_lab.magics import NnxLabMagics

        kinds: dict[str, list[str]] = {}
        for kind, prefix in (("line", "%"), ("cell", "%%")):
            for magic in NnxLabMagics.magics[kind]:
                kinds.setdefault(magic, []).append(prefix + magic)
        out: list[str] = []
        for magic in sorted(kinds):
            method = getattr(
                NnxLabMagics,
                NnxLabMagics.magics["line"].get(magic) or NnxLabMagics.magics["cell"][magic],
            )
            parser = getattr(method, "parser", None)
            if parser is None:
                raise ValueError(f"magic {magic} has no magic_arguments parser: its options cannot be documented")
            out += [f".. _magic-{magic}:", ""] + _title(" / ".join(f"``{k}``" for k in kinds[magic]), "~")
            out += [".. code-block:: text", ""]
            out += ["   " + line if line.strip() else "" for line in _help(parser)]
            out.append("")
        out += [".. _magic-config:", ""] + _title("Configurable defaults (``%config NnxLabMagics``)", "~")
        for name, trait in sorted(NnxLabMagics.class_traits(config=True).items()):
            out += [
                f"``NnxLabMagics.{name}`` (default ``{trait.default_value!r}``)",
                f"   {trait.help}",
                "",
            ]
        return out


def setup(app):  # Sphinx's extension entry point
    app.add_directive("nnx-api", NnxApi)
    app.add_directive("nnx-magics", NnxMagics)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
