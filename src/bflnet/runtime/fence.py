"""Calls into code that bflnet does not own (the plugins) behind a fence.

Whatever leaves a fenced call, an exception, ``sys.exit``, ``KeyboardInterrupt`` or any
other ``BaseException``, becomes one :class:`~bflnet.validation.errors.PluginError` whose
message names who was called, the hook and what it raised; :func:`refusal` is the same
error for a hook that returned the wrong kind of value. The original exception is kept as
the error's cause (a traceback from the Python API shows where the plugin failed).

Let through unchanged: a real interrupt, that is bflnet's own
:class:`~bflnet.runtime.interrupt.Interrupted` (the command line's Ctrl-C and SIGTERM),
or a ``KeyboardInterrupt`` while Python's own SIGINT handler is in place (from the Python
API the user's Ctrl-C looks the same as a plugin's ``raise KeyboardInterrupt``, and
stopping is the safe reading); and a ``PluginError`` from a fence further in.

Standard library only, as the rest of :mod:`bflnet.runtime`.
"""

from __future__ import annotations

import contextlib
import reprlib
import signal
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from bflnet.runtime.interrupt import Interrupted
from bflnet.validation.errors import PluginError

T = TypeVar("T")

#: Most characters of an exception's message or of a value shown in a fence's error.
MAX_SHOWN = 200

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4
_REPR.maxlevel = 3


def _python_handles_sigint() -> bool:
    try:
        return signal.getsignal(signal.SIGINT) is signal.default_int_handler
    except (ValueError, OSError):  # pragma: no cover - no signals here
        return False


def passes(exc: BaseException) -> bool:
    """Whether ``exc`` leaves a fence unchanged (module docs)."""
    if isinstance(exc, PluginError | Interrupted):
        return True
    return type(exc) is KeyboardInterrupt and _python_handles_sigint()


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_SHOWN else f"{text[:MAX_SHOWN - 3]}..."


def _safely(render: Callable[[], str], fallback: str) -> str:
    """``render()`` of a plugin's object, or ``fallback`` if that fails (a real interrupt
    is raised)."""
    try:
        return _one_line(render())
    except BaseException as exc:  # its __str__ or __repr__ is the plugin's code too
        if passes(exc):
            raise
        return fallback


def raised(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` (its type alone when the message is empty), one line."""
    name = type(exc).__name__
    text = _safely(lambda: str(exc), "")
    return f"{name}: {text}" if text else name


def a_kind(value: Any) -> str:
    """``value``'s type with its article: ``an int``, ``a str``."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def shown(value: Any) -> str:
    """``value`` for an error message: its type and a short repr, one line."""
    if value is None:
        return "None"
    return f"{type(value).__name__} {_safely(lambda: _REPR.repr(value), '(its repr failed)')}"


def failure(who: str, hook: str, exc: BaseException) -> PluginError:
    """The error for ``exc`` raised by ``who``'s ``hook``."""
    return PluginError(f"{who}: {hook} raised {raised(exc)}")


def refusal(who: str, hook: str, value: Any, expected: str, why: str = "") -> PluginError:
    """The error for ``who``'s ``hook`` returning ``value`` where ``expected`` is needed
    (``why``: what is wrong with it, when its type alone does not say)."""
    because = f" ({why})" if why else ""
    return PluginError(f"{who}: {hook} returned {shown(value)}{because}; it must return "
                       f"{expected}")


def call(who: str, hook: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` behind the fence."""
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:
        if passes(exc):
            raise
        raise failure(who, hook, exc) from exc


@contextlib.contextmanager
def fenced(who: str, hook: str, *,
           passing: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """The block behind the fence; exceptions of the ``passing`` types leave it unchanged
    (a config's ``ValueError``: the user's value refused)."""
    try:
        yield
    except BaseException as exc:
        if passes(exc) or isinstance(exc, passing):
            raise
        raise failure(who, hook, exc) from exc


def _plugin_error_in(exc: BaseException) -> PluginError | None:
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop(0)
        if current is None or id(current) in seen:
            continue
        if isinstance(current, PluginError):
            return current
        seen.add(id(current))
        todo += [current.__cause__, current.__context__]
    return None


@contextlib.contextmanager
def surfaced() -> Iterator[None]:
    """An error leaving the block with a :class:`PluginError` in its chain of causes and
    contexts is replaced by it: a plugin learner's error stays the plugin's, not a run
    failure of the protocol that called it."""
    try:
        yield
    except Exception as exc:
        found = _plugin_error_in(exc)
        if found is None or found is exc:
            raise
        raise found  # noqa: B904 - its own cause (the plugin's exception) is kept
