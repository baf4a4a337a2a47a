"""``rewind._span_errors``: which credentials a failed request carried, and removing them."""

from __future__ import annotations

import httpx

from rewind.engine.span_errors import REMOVED, request_credentials, without_credentials


def _status_error(request: httpx.Request) -> httpx.HTTPStatusError:
    response = httpx.Response(401, request=request, text="denied")
    return httpx.HTTPStatusError("denied", request=request, response=response)


def test_the_credentials_of_a_failed_request() -> None:
    request = httpx.Request(
        "POST",
        "https://gw.example/v1/chat?key=query-secret-123&model=gpt",
        headers={
            "Authorization": "Bearer sk-bearer-secret-1",
            "x-api-key": "sk-ant-secret-22",
            "x-goog-api-key": "short",  # too short to be worth rewriting ordinary text
            "user-agent": "OpenAI/Python 1.0 with-a-long-value",
        },
    )
    found = request_credentials(_status_error(request))
    assert found == {"Bearer sk-bearer-secret-1", "sk-bearer-secret-1", "sk-ant-secret-22", "query-secret-123"}
    # Through the response's request too; an error with no request has none.
    assert request_credentials(httpx.ReadTimeout("slow", request=request)) == found
    assert request_credentials(ValueError("plain")) == frozenset()
    assert request_credentials(httpx.HTTPStatusError("x", request=request, response=httpx.Response(500))) == found


def test_every_string_loses_them_keys_included() -> None:
    credentials = frozenset({"Bearer sk-bearer-secret-1", "sk-bearer-secret-1"})
    record = {
        "message": "got Bearer sk-bearer-secret-1 and sk-bearer-secret-1",
        "args": ["sk-bearer-secret-1", 3],
        "body": {"sk-bearer-secret-1": {"echo": ["x sk-bearer-secret-1 y"]}},
    }
    assert without_credentials(record, credentials) == {
        "message": f"got {REMOVED} and {REMOVED}",
        "args": [REMOVED, 3],
        "body": {REMOVED: {"echo": [f"x {REMOVED} y"]}},
    }
    assert without_credentials(record, frozenset()) is record
