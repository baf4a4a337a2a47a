"""The ``wrapt`` wrappers patched over SDK methods: ``sync_wrapper`` and ``async_wrapper``.

Each call first asks whether it is a step (``_start``): with no session, or nested in
a hooked call already running live, it passes straight through. Otherwise the provider
builds its request identity, the interception core opens the step, and the call is
replayed from the recording or run live with its span current and recorded through the
provider's ``Invocation``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rewind.engine.context import current_session, warn_if_threadless
from rewind.engine.core import begin_call

from ._invocation import Invocation
from ._streams import NESTED as _NESTED

if TYPE_CHECKING:
    from rewind.engine.policy import ReplayPolicy

    from ._surface import Surface


#: Where the SDKs take the model: ``model=`` (most), ``modelId=`` (Bedrock).
_MODEL_KEYS = ("model", "modelId")


def live_model(policy: ReplayPolicy, kwargs: dict[str, Any]) -> None:
    """Rewrite the model of a live call as ``model_map`` says, in the keywords the SDK is
    about to send (so the request rewind records is the one that ran)."""
    for key in _MODEL_KEYS:
        model = kwargs.get(key)
        if isinstance(model, str):
            mapped = policy.live_model(model)
            if mapped != model:
                kwargs[key] = mapped


def _start(surface: Surface, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Invocation | None:
    """The call's invocation, or ``None`` to pass straight through."""
    if _NESTED.get():
        return None
    session = current_session()
    if session is None:
        warn_if_threadless("llm", surface.name)
        return None
    provider = surface.provider
    policy = session.policy
    if policy is not None and policy.model_map and policy.runs_live("llm", surface.name):
        live_model(policy, kwargs)
    request = provider.request(surface, instance, args, kwargs)
    call = begin_call(
        "llm",
        surface.name,
        request,
        describe=lambda: provider.span(surface, instance, request),
        is_async=surface.is_async,
    )
    if call is None:
        return None
    call.credential_source = instance  # read only if the call fails
    return provider.invocation(surface, call, instance, kwargs)


def sync_wrapper(surface: Surface) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        invocation = _start(surface, instance, args, kwargs)
        if invocation is None:
            return wrapped(*args, **kwargs)
        if invocation.call.replaying:
            return invocation.replay()
        token = _NESTED.set(True)
        try:
            with invocation.call.activate():
                result = wrapped(*args, **kwargs)
        except BaseException as exc:
            invocation.failed(exc)
            raise
        finally:
            _NESTED.reset(token)
        return invocation.adopt(result)

    return wrapper


def async_wrapper(surface: Surface) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        invocation = _start(surface, instance, args, kwargs)
        if invocation is None:
            return await wrapped(*args, **kwargs)
        if invocation.call.replaying:
            return invocation.replay()
        token = _NESTED.set(True)
        try:
            with invocation.call.activate():
                result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            invocation.failed(exc)
            raise
        finally:
            _NESTED.reset(token)
        return invocation.adopt(result)

    return wrapper
