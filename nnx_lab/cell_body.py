"""Run a cell magic's body as IPython runs a cell: the last expression is displayed and stored.

``%%nnx_capture`` and ``%%nnx_split`` run their body in the user namespace. A plain ``exec``
would drop the value of the body's last line; :func:`run_cell_body` evaluates it and hands it
to ``shell.displayhook`` (so it is shown, ``Out[n]`` and ``_`` are updated and ``run_cell``'s
result holds it), unless the body ends with ``;``, as IPython does for a cell.
"""

from __future__ import annotations

import ast
import contextlib
import io
import tokenize
from typing import Any, ContextManager


def run_cell_body(shell: Any, body: str, within: ContextManager | None = None) -> None:
    """Run ``body`` (a cell magic's cell) in ``shell``'s user namespace, as IPython runs a cell.

    Every statement runs; when the last one is an expression, its value goes to
    ``shell.displayhook`` (not when the body ends with ``;``). The source is cached under
    ``shell.compile.cache``'s file name, so a traceback shows the body's lines. ``within``: a
    context manager entered just before the first statement and exited after the last
    expression is evaluated but before its value is displayed (a capture is disarmed before
    anything renders the value). Exceptions propagate unchanged.
    """
    source = shell.transform_cell(body) if hasattr(shell, "transform_cell") else body
    compiler = getattr(shell, "compile", None)
    filename = "<cell body>"
    if compiler is not None and hasattr(compiler, "cache"):
        filename = compiler.cache(source, getattr(shell, "execution_count", 0), raw_code=body)
    else:
        compiler = None
    parse = getattr(compiler, "ast_parse", None) or (lambda text, name: ast.parse(text, filename=name))
    tree = parse(source, filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None

    def compiled(node: ast.AST, mode: str) -> Any:
        return compiler(node, filename, mode) if compiler is not None else compile(node, filename, mode)

    statements = compiled(tree, "exec")
    expression = compiled(ast.fix_missing_locations(ast.Expression(last.value)), "eval") if last else None
    value = None
    with within if within is not None else contextlib.nullcontext():
        exec(statements, shell.user_global_ns, shell.user_ns)
        if expression is not None:
            value = eval(expression, shell.user_global_ns, shell.user_ns)
    if expression is not None and value is not None and not _ends_with_semicolon(source):
        shell.displayhook(value)


def _ends_with_semicolon(source: str) -> bool:
    """Whether the last token of ``source`` (comments and blank lines aside) is ``;``.

    >>> _ends_with_semicolon("x = 1\\nx;  # quiet"), _ends_with_semicolon("x"), _ends_with_semicolon("'a;'")
    (True, False, False)
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    for token in reversed(tokens):
        if token.type in (tokenize.ENDMARKER, tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT,
                          tokenize.DEDENT, tokenize.INDENT):
            continue
        return token.type == tokenize.OP and token.string == ";"
    return False
