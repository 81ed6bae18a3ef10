"""What every magic uses, once: the line split into arguments, TARGET and other expressions
evaluated in the user namespace, names checked before binding, numeric options checked, ``--only``
read, and a cell body run as IPython runs a cell.

Every refusal is one :class:`~IPython.core.error.UsageError` line. No jax import at module level
(``%load_ext nnx_lab`` stays cheap).

Cell bodies: ``%%nnx_capture`` and ``%%nnx_split`` run their body in the user namespace. A plain
``exec`` would drop the value of the body's last line; :func:`run_cell_body` evaluates it and
hands it to ``shell.displayhook`` (so it is shown, ``Out[n]`` and ``_`` are updated and
``run_cell``'s result holds it), unless the body ends with ``;``, as IPython does for a cell.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import logging
import sys
import tokenize
import traceback
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Protocol

from IPython.core.error import UsageError

from .._ipython.names import check_name as check_bindable_name
from ..core.checks import check_number, is_python_name, looks_like_path
from ..core.text import clip, first_line, one_line
from ._suggest import expression_hint, unrecognized

if TYPE_CHECKING:
    from flax import nnx
    from IPython.core.interactiveshell import InteractiveShell

_log = logging.getLogger("nnx_lab")

#: the numeric options' defaults; ``%config NnxLabMagics.<name> = ...`` changes them per shell
DEFAULT_MAX_ROWS = 200  # %nnx_snapshot --max-rows
DEFAULT_RATE = 2.0  # %nnx_watch --rate (refreshes per second)
DEFAULT_BINS = 16  # %%nnx_capture --bins


class MagicsHost(Protocol):
    """What a magic function reads of its ``self`` (the :class:`~nnx_lab.magics.NnxLabMagics`
    it is a method of): the shell and the configured defaults of the numeric options."""

    shell: InteractiveShell
    max_rows: int
    rate: float
    bins: int


def split_expressions(text: str) -> list[str]:
    """Split a magic line on whitespace outside brackets and strings.

    >>> split_expressions("model nnx.All(nnx.Param, nnx.PathContains('a b')) ... --as g,p,r")
    ['model', "nnx.All(nnx.Param, nnx.PathContains('a b'))", '...', '--as', 'g,p,r']
    """
    parts: list[str] = []
    current: list[str] = []
    depth, quote, i = 0, "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == "\\" and i + 1 < len(text):
                current.append(text[i + 1])
                i += 1
            elif text.startswith(quote, i):
                current.extend(quote[1:])
                i += len(quote) - 1
                quote = ""
        elif ch in "'\"":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            current.append(quote)
            i += len(quote) - 1
        elif ch in "([{":
            depth += 1
            current.append(ch)
        elif ch in ")]}":
            depth -= 1
            current.append(ch)
        elif ch.isspace() and depth <= 0:
            if current:
                parts.append("".join(current))
                current = []
        else:
            current.append(ch)
        i += 1
    if quote or depth > 0:
        raise UsageError(f"unbalanced {'quote' if quote else 'bracket'} in: {text.strip()}")
    if current:
        parts.append("".join(current))
    return parts


def parse_line(magic: Callable[..., object], line: str) -> argparse.Namespace:
    """``line`` parsed by ``magic``'s ``@magic_arguments`` parser after :func:`split_expressions`
    (so expressions may hold spaces); a bad line is a UsageError with the parser's message, and an
    unknown option gets the closest of the magic's own ("--gard ...; did you mean --grads?")."""
    args, extras = magic.parser.parse_known_args(split_expressions(line))
    if extras:
        raise UsageError(unrecognized(magic.parser, extras))
    return args


def evaluate_target(shell: InteractiveShell, expression: str, what: str = "TARGET") -> Any:
    """Evaluate a TARGET expression in the user namespace; a clear one-line error otherwise."""
    expression = expression.strip()
    if not expression:
        raise UsageError(f"missing {what}: give a model, a State or an expression naming one")
    try:
        return eval(expression, shell.user_ns)  # the user's own expression, in their namespace
    except NameError as e:
        hint = expression_hint(e, shell.user_ns)
        raise UsageError(f"{what} {clip(repr(expression))}: {first_line(str(e))}{hint}") from None
    except Exception as e:  # noqa: BLE001 - boundary: the user's expression may raise anything; one line
        _log.debug("nnx_lab: %s %r raised", what, expression, exc_info=True)
        hint = expression_hint(e, shell.user_ns)
        raise UsageError(f"{what} {clip(repr(expression))} raised {one_line(e)}{hint}") from None


def check_option(value: object, option: str, low: float, high: float, **kwargs: bool) -> Any:
    """A numeric option in its bounds (``core.checks.check_number``); else a one-line UsageError."""
    try:
        return check_number(value, option, low, high, **kwargs)
    except ValueError as e:
        raise UsageError(str(e)) from None


def check_name(
    name: str, what: str = "--as", shell: InteractiveShell | None = None, target_text: str | None = None
) -> str:
    """``name`` if nnx_lab may bind it in the user namespace (``_ipython.names.check_name``: not a
    keyword, builtin, IPython name, nor the name holding TARGET); else a one-line UsageError."""
    namespace = getattr(shell, "user_ns", None)
    target = None
    if namespace is not None and target_text is not None and is_python_name(target_text.strip()):
        target = namespace.get(target_text.strip())
    try:
        return check_bindable_name(name, what=what, namespace=namespace, target=target, target_text=target_text)
    except ValueError as e:
        raise UsageError(first_line(str(e))) from None


def parse_only(text: str | None, model: nnx.Module, namespace: dict[str, Any]) -> Any:
    """``--only`` (``%nnx_view``, ``%%nnx_capture``): ``...`` when not given; a module path of
    the model as written (``blocks[0]``, ``blocks/0``, ``blocks.0``); else the expression's value
    in the namespace (an NNX filter, or a path as a string). Text written like a path that names
    nothing in the namespace either is kept as a path that matches no module (each magic reports
    that); any other failure is a UsageError."""
    if text is None:
        return ...
    from ..core import compat
    from ..core.graph import module_paths_text

    stripped = text.strip()
    if any(stripped in module_paths_text(tuple(path)) for path, _ in compat.iter_modules(model)):
        return stripped
    try:
        return eval(stripped, namespace)  # the user's own filter expression, in their namespace
    except Exception as e:  # noqa: BLE001 - boundary: the user's expression may raise anything; one line
        _log.debug("nnx_lab: --only %r raised", stripped, exc_info=True)
        if isinstance(e, (NameError, SyntaxError)) and looks_like_path(stripped):
            return stripped
        raise UsageError(
            f"--only {clip(repr(stripped))} is not a module path of TARGET, and as an expression "
            f"it raised {one_line(e)}"
        ) from None


def run_body(shell: InteractiveShell, body: str) -> None:
    """Run the cell body as a cell (:func:`run_cell_body`); a failure becomes one UsageError
    line naming the body's line and saying the model is unchanged."""
    try:
        run_cell_body(shell, body)
    except Exception as e:  # noqa: BLE001 - boundary: the user's cell body; one line naming its line
        _log.debug("nnx_lab: the cell body raised", exc_info=True)
        frames = list(traceback.walk_tb(sys.exc_info()[2]))
        # The frame after run_cell_body's own is the body's: its file name marks the body's lines.
        names = [f.f_code.co_filename for f, _ in frames]
        codes = [f.f_code for f, _ in frames]
        body_file = names[codes.index(run_cell_body.__code__) + 1] if run_cell_body.__code__ in codes[:-1] else None
        lines = [lineno for (f, lineno), name in zip(frames, names) if body_file is not None and name == body_file]
        if isinstance(e, SyntaxError) and e.lineno is not None:
            lines = [e.lineno]
        where = f" (cell line {lines[-1]})" if lines else ""
        raise UsageError(f"the cell body raised {one_line(e)}{where}; the model is unchanged") from None


def run_cell_body(shell: InteractiveShell, body: str, within: ContextManager | None = None) -> None:
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

    def compiled(node: ast.Module | ast.Expression, mode: str) -> Any:
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
        if token.type in (
            tokenize.ENDMARKER,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.COMMENT,
            tokenize.DEDENT,
            tokenize.INDENT,
        ):
            continue
        return token.type == tokenize.OP and token.string == ";"
    return False
