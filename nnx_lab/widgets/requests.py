"""The widgets' request protocol, in one module: what the browser asks and how it is answered.

A widget class lists its browser messages with :func:`command`: ``@command(wire.VIEW, wire.APPLY)``
on a method ``(self, content, buffers)`` that returns the acknowledgement's fields (:class:`AckFields`,
sent back as a :class:`~nnx_lab.widgets.wire.Ack`: ``{"type": "ack", "id": <the message's id>,
**fields}``), or None to answer otherwise (new traits, a custom message). A message is checked
(:func:`message_problem`: an object, at most :data:`MAX_MESSAGE_BYTES`) before any handler sees it;
a refused one goes to :meth:`Requests._refuse`. A class with ``_queue_while_busy`` routes its
messages to the nnx_lab subshell while a cell runs (:mod:`nnx_lab._ipython.busy_queue`): there a
message is only acknowledged as queued (``state: "queued"``, with ``_queued_ack``'s fields) and its
handler runs on the main thread at the next ``tick()``/``track()`` step or after the cell, which
answers it again (``done``/``error``). The front end's side is ``js/src/shared/requests.js`` (ids,
pending/queued state per control); the message types are ``wire.py``'s TypedDicts.

Why not anywidget's ``experimental.command`` / ``invoke``: probed on 2026-11-28 with a widget of two
commands invoked from its ESM in Chromium, it works on both stacks (classic Notebook 6.5 with
ipywidgets 7.7.1 + anywidget 0.9.21, Colab's; JupyterLab 4 with ipywidgets 8.1.9 + anywidget 0.11):
answers with buffers both ways in 15-60 ms. But each ``invoke`` takes one answer and rejects after
3 s unless given a longer ``signal``: a click while a cell ran (a 6 s ``time.sleep``) was rejected
with ``TimeoutError`` after 3,001 ms on both stacks (the kernel reads it only when the cell ends),
and a 5 s handler likewise. Ours keeps such a click pending, says "queued" where a subshell reads it
mid-cell, and answers it when it ran; a panel may also answer by new state (``settle``), and a
message is size-checked before it is read (anywidget's handler indexes its command table with the
browser's name unchecked). Replacing it would delete about 40 lines here (the table and dispatch)
and 30 in requests.js (ids, matching acks) and lose all that, so it stays.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, ClassVar, TypedDict, TypeVar

from .._ipython import busy_queue
from ..core.text import quote, safe_repr
from . import wire

__all__ = ["ANY", "AckFields", "Buffers", "MessageId", "Requests", "command", "message_id", "message_problem"]

F = TypeVar("F", bound=Callable[..., Any])

#: a browser message's binary parts as the kernel hands them over (memoryviews; ``comm`` types them bytes)
Buffers = list[bytes | memoryview] | None
#: a message's ``id`` as an answer echoes it (:func:`message_id`)
MessageId = int | float | str | None

#: Handles every message type no other command names.
ANY = "*"
#: the largest browser message a widget reads (a click is a few hundred bytes; 100k paths are not a click)
MAX_MESSAGE_BYTES = 65_536
#: the most characters of a message's ``id`` echoed back as text (a dict or a list id is quoted to this)
ID_CHARS = 200
#: the largest integer id echoed as a number (JavaScript's exact integers)
_MAX_SAFE_INT = 2**53 - 1


class AckFields(TypedDict, total=False):
    """What a command returns: an :class:`~nnx_lab.widgets.wire.Ack` without its type and id."""

    state: wire.RequestState
    message: str
    text: str
    code: str


def command(*types: str) -> Callable[[F], F]:
    """Mark a method ``(self, content, buffers) -> AckFields | None`` as the handler of these message types."""

    def mark(method: F) -> F:
        method._nnx_lab_commands = types  # type: ignore[attr-defined]
        return method

    return mark


def message_problem(content: object) -> str | None:
    """Why a browser message is refused before it is read, or None: not an object, or too large.

    >>> message_problem({"type": "view", "name": "x" * 100_000})
    'message of 100,028 bytes refused (at most 65,536)'
    """
    if not isinstance(content, dict):
        return f"message must be an object, not {type(content).__name__}"
    size = len(json.dumps(content, default=str))
    if size > MAX_MESSAGE_BYTES:
        return f"message of {size:,} bytes refused (at most {MAX_MESSAGE_BYTES:,})"
    return None


def message_id(content: object) -> MessageId:
    """A message's ``id`` as the answer echoes it, so a front end can match the answer to its request:
    an int (of JavaScript's exact ones), a finite float or a string of at most :data:`ID_CHARS`
    characters as it is; any other id (a dict, a 10,000-element list, a long string) as its JSON text
    quoted to :data:`ID_CHARS` characters. None when the message has no id.

    >>> message_id({"id": 7}), message_id({"id": {"req": 3}}), message_id({"id": list(range(10_000))})[-26:]
    (7, '{"req": 3}', '… (58,690 more characters)')
    """
    rid = content.get("id") if isinstance(content, dict) else None
    if rid is None:
        return None
    if isinstance(rid, int) and not isinstance(rid, bool) and abs(rid) <= _MAX_SAFE_INT:
        return rid
    if isinstance(rid, float) and math.isfinite(rid):
        return rid
    if isinstance(rid, str):
        return quote(rid, ID_CHARS)
    try:
        text = json.dumps(rid, default=safe_repr)
    except (ValueError, TypeError, RecursionError):  # a cycle, NaN keys, nesting past the recursion limit
        text = safe_repr(rid)
    return quote(text, ID_CHARS)


class Requests:
    """The dispatch of a widget's browser messages (mixed into ``widgets._base.Widget``): call
    :meth:`_listen` once the widget exists; ``send`` is the widget's (anywidget's custom message)."""

    #: message type -> method name, from the ``@command`` methods of the class and its bases
    _commands: ClassVar[dict[str, str]] = {}
    #: route messages to the nnx_lab subshell while a cell runs (needs a ``busy_note`` trait)
    _queue_while_busy: ClassVar[bool] = False
    #: fields of the "queued" acknowledgement besides type, id and state
    _queued_ack: ClassVar[AckFields] = {}

    send: Callable[..., None]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        commands: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for name, member in vars(klass).items():
                for kind in getattr(member, "_nnx_lab_commands", ()):
                    commands[kind] = name
        cls._commands = commands

    def _listen(self, on_msg: Callable[[Callable[[object, object, Buffers], None]], None]) -> None:
        on_msg(self._on_message)
        if self._queue_while_busy:
            self.routing = busy_queue.route_while_busy(self)  # None, or why clicks wait for the cell to end
            self.busy_note = busy_queue.busy_note(self.routing)  # said on screen beside a pending click

    def _on_message(self, _widget: object, content: object, buffers: Buffers) -> None:
        problem = message_problem(content)
        if problem or not isinstance(content, dict):  # message_problem refuses every non-dict
            self._refuse(content, problem or "message must be an object")
            return
        kind = content.get("type")
        name = self._commands.get(kind) if isinstance(kind, str) else None
        name = name or self._commands.get(ANY)
        if name is None:
            return
        handler = getattr(self, name)
        rid = message_id(content)
        if self._queue_while_busy and not busy_queue.on_main_thread():
            # A subshell thread, while a cell runs: never touch the model here.
            self.send({"type": wire.ACK, "id": rid, "state": "queued", **self._queued_ack})
            busy_queue.post(lambda: self._answer(handler, content, rid, buffers))
            return
        self._answer(handler, content, rid, buffers)

    def _answer(
        self, handler: Callable[[dict, Buffers], AckFields | None], content: dict, rid: MessageId, buffers: Buffers
    ) -> None:
        reply = handler(content, buffers)
        if reply is not None:
            self.send({"type": wire.ACK, "id": rid, **reply})

    def _refuse(self, content: object, problem: str) -> None:
        """A message refused before it was read (not an object, too large): ignored unless overridden."""
