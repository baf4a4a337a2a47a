"""``@rewind.llm``, ``@rewind.tool`` and ``@rewind.memory``.

Each decorated call is one span and one event. The request is the call's arguments
bound to the function's parameter names (``self``/``cls`` left out, ``**kwargs``
flattened), so calling positionally or by keyword gives the same identity.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, overload

from rewind.data.canonical import from_jsonable
from rewind.data.function_names import function_name

from .core import begin_call

F = TypeVar("F", bound=Callable[..., Any])


def _target(fn: Callable[..., Any]) -> Any:
    """What names a decorated callable: the function inside (nested) partials, else ``fn``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def _call_name(fn: Callable[..., Any]) -> str:
    # Never a repr: a partial's or a callable object's repr holds a memory address, and
    # the name is part of a call's identity in every process.
    target = _target(fn)
    qualname = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if not isinstance(qualname, str):
        qualname = type(target).__qualname__  # a callable object: its class names it
    return qualname.replace("<locals>.", "")


def _named(fn: Callable[..., Any]) -> tuple[str, str]:
    """``(module, qualname)`` of the function behind a decorated callable (a callable object: its class)."""
    target = _target(fn)
    qualname = getattr(target, "__qualname__", None)
    if not isinstance(qualname, str):
        target = type(target)
        qualname = target.__qualname__
    return str(getattr(target, "__module__", None)), qualname


def _owner(fn: Callable[..., Any]) -> str:
    """The function behind a decorated callable, to tell two of them apart in a run."""
    module, qualname = _named(fn)
    return f"{module}.{qualname}"


def _function(fn: Callable[..., Any]) -> str:
    """What a step records as its function: ``module:qualname`` (rewind.function_names)."""
    return function_name(*_named(fn))


class _RequestBinder:
    """Turns ``(args, kwargs)`` into the request dict for one decorated function."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        # A partial binds through its function's full signature, bound arguments first.
        self._partial: functools.partial[Any] | None = None
        if isinstance(fn, functools.partial):
            self._partial = _flatten_partial(fn)
            fn = self._partial.func
        try:
            self._signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self._signature = None
        params = list(self._signature.parameters.values()) if self._signature else []
        self._skip_first = bool(params) and params[0].name in ("self", "cls") and params[0].kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
        self._var_kw = {p.name for p in params if p.kind is inspect.Parameter.VAR_KEYWORD}
        # Named parameters (and an optional **kwargs) are bound by hand: Signature.bind
        # is general, slow, and runs on every call. Anything unusual (positional-only
        # or *args parameters, a call bind would reject) takes the general path.
        simple = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        self._fast: tuple[tuple[str, bool], ...] | None = None
        if self._signature is not None and all(
            p.kind in simple or p.kind is inspect.Parameter.VAR_KEYWORD for p in params
        ):
            named = [p for p in params if p.kind in simple]
            self._fast = tuple((p.name, p.default is inspect.Parameter.empty) for p in named)
            self._names = frozenset(p.name for p in named)
            self._positional = sum(1 for p in named if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)

    def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if self._partial is not None:
            # A partial's bound arguments are part of the request: partial(f, 2) and
            # partial(f, 3) are different calls.
            args = (*self._partial.args, *args)
            kwargs = {**self._partial.keywords, **kwargs}
        if self._fast is not None:
            fast = self._bind_fast(args, kwargs)
            if fast is not None:
                return fast
        if self._signature is None:
            return {"args": list(args), "kwargs": kwargs}
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError:
            # The live call will raise the same TypeError; keep a faithful request anyway.
            return {"args": list(args), "kwargs": kwargs}
        request: dict[str, Any] = {}
        for index, (name, value) in enumerate(bound.arguments.items()):
            if index == 0 and self._skip_first:
                continue
            if name in self._var_kw:
                request.update(value)
            else:
                request[name] = value
        return request

    def _bind_fast(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
        """What the general path returns, for calls it would bind cleanly; else ``None``."""
        assert self._fast is not None
        given = len(args)
        if given > self._positional:
            return None
        request: dict[str, Any] = {}
        taken = 0
        for index, (name, required) in enumerate(self._fast):
            if index < given:  # positional parameters come first
                if name in kwargs:
                    return None  # multiple values for one argument
                value = args[index]
            elif name in kwargs:
                value = kwargs[name]
                taken += 1
            elif required:
                return None  # missing argument
            else:
                if index == 0 and self._skip_first:
                    return None  # the general path skips whichever argument is bound first
                continue
            if index == 0 and self._skip_first:
                continue
            request[name] = value
        if taken != len(kwargs):
            if not self._var_kw:
                return None  # an unexpected keyword argument
            for key, value in kwargs.items():
                if key not in self._names:
                    request[key] = value
        return request


def _flatten_partial(fn: functools.partial[Any]) -> functools.partial[Any]:
    """One partial for nested ones (``partial`` already flattens those it builds itself)."""
    args: tuple[Any, ...] = ()
    keywords: dict[str, Any] = {}
    inner: Callable[..., Any] = fn
    while isinstance(inner, functools.partial):
        args = (*inner.args, *args)
        keywords = {**inner.keywords, **keywords}
        inner = inner.func
    return functools.partial(inner, *args, **keywords)


#: How many functions this process decorated (a run that recorded nothing says whether it had any).
defined = 0


def _wrap(kind: str, fn: Callable[..., Any], name: str | None) -> Callable[..., Any]:
    global defined
    if not callable(fn):
        raise TypeError(f"@rewind.{kind} decorates a function, not {type(fn).__name__}")
    defined += 1
    call_name = name or _call_name(fn)
    owner = _owner(fn)
    # Written with each step, so a replay and `rewind check` can tell which function
    # recorded it when two share one name= (the name, not this, is the identity).
    function = _function(fn)
    recorded_by = {"function": function}
    bind = _RequestBinder(fn)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            call = begin_call(kind, call_name, bind(args, kwargs), is_async=True, function=function)
            if call is None:
                return await fn(*args, **kwargs)
            call.session.note_owner(kind, call_name, owner)
            if call.replaying:
                return from_jsonable(call.replay_response())
            try:
                with call.activate():
                    result = await fn(*args, **kwargs)
            except BaseException as exc:
                call.fail(exc, extra=recorded_by)
                raise
            call.succeed(result, extra=recorded_by)
            return result

        async_wrapper.__rewind_kind__ = kind  # type: ignore[attr-defined]
        async_wrapper.__rewind_name__ = call_name  # type: ignore[attr-defined]
        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = begin_call(kind, call_name, bind(args, kwargs), is_async=False, function=function)
        if call is None:
            return fn(*args, **kwargs)
        call.session.note_owner(kind, call_name, owner)
        if call.replaying:
            return from_jsonable(call.replay_response())
        try:
            with call.activate():
                result = fn(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc, extra=recorded_by)
            raise
        call.succeed(result, extra=recorded_by)
        return result

    wrapper.__rewind_kind__ = kind  # type: ignore[attr-defined]
    wrapper.__rewind_name__ = call_name  # type: ignore[attr-defined]
    return wrapper


def _decorator(kind: str) -> Any:
    @overload
    def decorate(fn: F, /) -> F: ...
    @overload
    def decorate(fn: None = None, /, *, name: str | None = None) -> Callable[[F], F]: ...

    def decorate(fn: Any = None, /, *, name: str | None = None) -> Any:
        if fn is None:
            return lambda f: _wrap(kind, f, name)
        if isinstance(fn, str):
            raise TypeError(f"use @rewind.{kind}(name={fn!r}) to name a call")
        return _wrap(kind, fn, name)

    decorate.__name__ = kind
    decorate.__qualname__ = kind
    decorate.__doc__ = (
        f"Record and replay calls of the decorated function as {kind!r} events.\n\n"
        f"Use bare (``@rewind.{kind}``) or with ``name=`` to set the recorded call name."
    )
    return decorate


llm = _decorator("llm")
tool = _decorator("tool")
memory = _decorator("memory")
