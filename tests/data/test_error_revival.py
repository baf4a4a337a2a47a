"""Recorded errors are data, never control flow: what a trace may make a replay raise."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.data.replayed_error import decode_error, encode_error, resolve_class
from rewind.errors import ReplayedError
from rewind.storage.trace import Trace


def _record(module: str, qualname: str, **extra: Any) -> dict[str, Any]:
    return {"type": f"{module}.{qualname}", "module": module, "qualname": qualname, "message": "crafted", **extra}


@pytest.mark.parametrize(
    ("module", "qualname"),
    [
        ("builtins", "SystemExit"),
        ("builtins", "KeyboardInterrupt"),
        ("builtins", "GeneratorExit"),
        ("builtins", "BaseException"),
        ("asyncio", "CancelledError"),  # only a recorded cancellation (a marked step) cancels a task
        ("_pytest.outcomes", "Exit"),  # an Exception subclass, but it ends a pytest session
        ("builtins", "StopIteration"),  # would end the agent's loop quietly
        ("builtins", "StopAsyncIteration"),
        ("bdb", "BdbQuit"),
    ],
)
def test_only_exception_subclasses_that_are_not_control_flow_are_revived(module: str, qualname: str) -> None:
    if module not in sys.modules:
        pytest.importorskip(module)
    error = decode_error(_record(module, qualname), step=2)
    assert type(error) is ReplayedError
    assert isinstance(error, Exception)
    assert error.original_type == f"{module}.{qualname}" and str(error) == "crafted"


def test_exception_subclasses_still_are() -> None:
    error = decode_error(_record("builtins", "TimeoutError"), step=0)
    assert isinstance(error, TimeoutError) and isinstance(error, ReplayedError)


CRAFTED_EXIT = """
import os
import rewind

@rewind.tool(name="step")
def step(x):
    raise AssertionError("ran live")

with rewind.replay(os.environ["TRACE"]):
    step(1)
print("not reached")
"""


def test_a_crafted_trace_cannot_end_the_process_with_status_zero(run_python, trace_path: Path) -> None:
    @rewind.tool(name="step")
    def step(x: int) -> int:
        raise ValueError("recorded")

    with rewind.record(trace_path), pytest.raises(ValueError):
        step(1)
    # Rewrite the recorded error as a SystemExit(0), as a hostile trace would.
    lines = trace_path.read_text().splitlines()
    event = json.loads(lines[1])
    event["error"] = _record("builtins", "SystemExit", args=[0])
    lines[1] = json.dumps(event, separators=(",", ":"))
    trace_path.write_text("\n".join(lines) + "\n")
    assert Trace.load(trace_path)[0].error["qualname"] == "SystemExit"

    result = run_python(CRAFTED_EXIT, env={"TRACE": str(trace_path)})
    assert result.returncode == 1
    assert "ReplayedError" in result.stderr and "builtins.SystemExit" not in result.stdout


# -- class resolution ------------------------------------------------------------------------


class LazyModule(types.ModuleType):
    """A module whose ``__getattr__`` would import things on demand."""

    fired: list[str]

    def __getattr__(self, name: str) -> Any:
        self.fired.append(name)
        raise AttributeError(name)


@pytest.fixture
def lazy_module() -> Iterator[LazyModule]:
    module = LazyModule("rewind_test_lazy")
    module.fired = []

    class Known(Exception):
        class Inner(Exception):
            pass

    Known.__module__ = module.__name__
    Known.__qualname__ = "Known"
    Known.Inner.__module__ = module.__name__
    Known.Inner.__qualname__ = "Known.Inner"
    module.Known = Known  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        yield module
    finally:
        del sys.modules[module.__name__]


def test_resolution_walks_module_dicts_and_never_fires_a_lazy_getattr(lazy_module: LazyModule) -> None:
    assert resolve_class("rewind_test_lazy", "Missing") is None
    assert resolve_class("rewind_test_lazy", "Known.Missing") is None
    assert lazy_module.fired == []
    assert resolve_class("rewind_test_lazy", "Known") is lazy_module.Known  # type: ignore[attr-defined]
    assert resolve_class("rewind_test_lazy", "Known.Inner") is lazy_module.Known.Inner  # type: ignore[attr-defined]
    error = decode_error(_record("rewind_test_lazy", "Lazy.Thing"), step=0)
    assert type(error) is ReplayedError and lazy_module.fired == []


def test_resolution_never_runs_a_descriptor() -> None:
    calls: list[str] = []

    class Meta(type):
        @property
        def Trap(cls) -> type[Exception]:  # looks like a nested class
            calls.append("property")
            return ValueError

    class Holder(metaclass=Meta):
        pass

    module = types.ModuleType("rewind_test_descriptors")
    module.Holder = Holder  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        assert resolve_class("rewind_test_descriptors", "Holder.Trap") is None
    finally:
        del sys.modules[module.__name__]
    assert calls == []


# -- attributes ------------------------------------------------------------------------------


class WithMethods(Exception):
    label = "default"

    def retry(self) -> str:
        return "retried"

    @property
    def kind(self) -> str:
        return "property"


def test_only_plain_scalar_attributes_are_set() -> None:
    record = _record(
        __name__,
        "WithMethods",
        attrs={
            "code": 429,
            "label": "recorded",  # shadows a class-level scalar: fine
            "__notes__": ["injected"],
            "__class__": "builtins.str",
            "_private": 1,
            "details": {"nested": True},
            "items": [1, 2],
            "retry": "not a method any more",
            "kind": "not a property",
            "original_type": "forged",
            "step": 99,
            "not an identifier": 1,
        },
    )
    error = decode_error(record, step=3)
    assert isinstance(error, WithMethods)
    assert error.code == 429 and error.label == "recorded"  # type: ignore[attr-defined]
    assert not hasattr(error, "__notes__") and not hasattr(error, "_private")
    assert not hasattr(error, "details") and not hasattr(error, "items")
    assert error.retry() == "retried" and error.kind == "property"
    assert error.original_type == f"{__name__}.WithMethods" and error.step == 3
    assert type(error).__mro__[0] is type(error) and type(error) is not str


def test_args_are_only_scalars() -> None:
    record = _record("builtins", "ValueError", args=["text", {"nested": 1}, 3])
    error = decode_error(record, step=0)
    assert error.args == ("text", 3)


def test_an_error_class_that_cannot_be_built_bare_replays_as_a_plain_replayed_error() -> None:
    import pydantic

    try:
        pydantic.TypeAdapter(int).validate_python("not a number")
    except pydantic.ValidationError as exc:
        record = encode_error(exc)
    for _ in range(2):  # the second time from the class cache
        revived = decode_error(record, 4)
        assert type(revived) is ReplayedError
        assert revived.step == 4 and "valid integer" in str(revived)
        assert revived.original_type.endswith("ValidationError")
