from __future__ import annotations

import sys
from pathlib import Path

import pytest

import rewind
from rewind.data.replayed_error import decode_error, encode_error


class ProviderError(Exception):
    def __init__(self, message: str, *, status_code: int, request: object) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = 1.5
        self.request = request  # not a scalar: never recorded


@rewind.llm
def call(prompt: str) -> str:
    raise ProviderError(f"rate limited on {prompt}", status_code=429, request=object())


def test_the_original_class_catches_the_replayed_error_with_its_scalars(trace_path: Path) -> None:
    with rewind.record(trace_path), pytest.raises(ProviderError):
        call("p")
    with rewind.replay(trace_path), pytest.raises(ProviderError) as info:
        call("p")
    error = info.value
    assert isinstance(error, rewind.ReplayedError)
    assert str(error) == "rate limited on p" and error.original_message == "rate limited on p"
    assert error.status_code == 429 and error.retry_after == 1.5 and error.step == 0
    assert error.original_type.endswith("ProviderError")
    assert not hasattr(error, "request")


def test_a_class_from_a_module_not_imported_is_never_imported() -> None:
    record = {"type": "json.tool.Evil", "module": "json.tool", "qualname": "Evil", "message": "boom"}
    assert "json.tool" not in sys.modules
    error = decode_error(record, step=3)
    assert "json.tool" not in sys.modules
    assert type(error) is rewind.ReplayedError and str(error) == "boom" and error.step == 3


def test_names_that_are_not_exception_classes_are_not_used() -> None:
    record = {"type": "os.system", "module": "os", "qualname": "system", "message": "nope"}
    assert type(decode_error(record, step=0)) is rewind.ReplayedError


def test_builtin_exceptions_round_trip_args() -> None:
    error = decode_error(encode_error(OSError(2, "No such file")), step=1)
    assert isinstance(error, OSError) and isinstance(error, rewind.ReplayedError)
    assert error.args == (2, "No such file")
