"""`rewind import` of content a GenAI completion hook left in external storage (``*_ref``).

The files are laid out as ``opentelemetry-util-genai``'s upload hook writes them (``json``:
the array on one line; ``jsonl``: one element a line with its ``index``); the real hook
is exercised in tests/importing/test_genai.py. Here: where the files are found (as
written, ``--content-root DIR``, ``--content-root URL`` over real HTTP on loopback), and
what happens when they are not (reported as missing content, never served).
"""

from __future__ import annotations

import functools
import json
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import rewind
from rewind.cli import cli

sys.path.insert(0, str(Path(__file__).parent))
from test_import_layouts import span, write

INPUTS = [{"role": "user", "parts": [{"type": "text", "content": "weather in Paris?"}]}]
OUTPUTS = [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny, 21C."}], "finish_reason": "stop"}]
SYSTEM = [{"type": "text", "content": "be brief"}]


def upload(folder: Path, fmt: str) -> dict[str, str]:
    """The hook's three files for one call; the reference attributes pointing at them."""
    folder.mkdir(parents=True, exist_ok=True)
    refs = {}
    for key, name, value in (
        ("gen_ai.input.messages_ref", "c0ffee_inputs", INPUTS),
        ("gen_ai.output.messages_ref", "c0ffee_outputs", OUTPUTS),
        ("gen_ai.system_instructions_ref", "5a5a_system_instruction", SYSTEM),
    ):
        path = folder / f"{name}.{fmt}"
        if fmt == "json":
            path.write_text(json.dumps(value) + "\n")
        else:  # newest element first: the index, not the line order, says where each goes
            lines = [json.dumps({**item, "index": i}) for i, item in enumerate(value)]
            path.write_text("\n".join(reversed(lines)) + "\n")
        refs[key] = str(path)
    return refs


def telemetry(tmp_path: Path, refs: dict[str, str]) -> Path:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini",
        "gen_ai.response.finish_reasons": ["stop"],
        **refs,
    }
    return write(tmp_path / "spans.jsonl", [span("00000000000000b1", "chat gpt-4o-mini", 0, attributes)])


def run(*args: Any) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def imported_request(path: Path) -> Any:
    [event] = rewind.Trace.load(path).events
    return event.request, event.response


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_references_read_where_the_hook_wrote_them(fmt: str, tmp_path: Path) -> None:
    source = telemetry(tmp_path, upload(tmp_path / "uploads", fmt))
    out = tmp_path / "run.rewind"
    result = run("import", source, "-o", out)
    assert result.exit_code == 0, result.output
    request, response = imported_request(out)
    assert request["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather in Paris?"},
    ]
    assert response["choices"][0]["message"]["content"] == "Sunny, 21C."
    assert run("check", out).exit_code == 0


@pytest.fixture
def moved(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """References to a bucket the files were since copied out of, to a local folder."""
    refs = upload(tmp_path / "copied", "jsonl")
    in_bucket = {k: "gs://team-bucket/genai/" + Path(v).name for k, v in refs.items()}
    yield telemetry(tmp_path, in_bucket), tmp_path / "copied"


def test_an_unreadable_reference_is_missing_content_never_served(moved: tuple[Path, Path], tmp_path: Path) -> None:
    source, _ = moved
    out = tmp_path / "run.rewind"
    result = run("import", source, "-o", out)
    assert result.exit_code == 1, result.output
    assert "NOT REPLAYABLE" in result.output
    assert "gs://team-bucket/genai/c0ffee_inputs.jsonl" in result.output and "--content-root" in result.output
    checked = run("check", out, "--json")
    assert checked.exit_code == 1
    [step] = json.loads(checked.output)["results"]
    assert step["status"] == "not replayable"
    assert any(p["code"] == "content_missing" and "external storage" in p["detail"] for p in step["problems"])
    with pytest.raises(rewind.DivergenceError), rewind.replay(out):
        import openai

        unpatch = rewind.patch_openai()
        try:
            with openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test", max_retries=0) as client:
                client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[
                        {"role": "system", "content": "be brief"},
                        {"role": "user", "content": "weather in Paris?"},
                    ],
                )
        finally:
            unpatch()


def test_content_root_folder(moved: tuple[Path, Path], tmp_path: Path) -> None:
    source, folder = moved
    out = tmp_path / "run.rewind"
    result = run("import", source, "-o", out, "--content-root", folder)
    assert result.exit_code == 0, result.output
    assert imported_request(out)[0]["messages"][1]["content"] == "weather in Paris?"


def test_content_root_url(moved: tuple[Path, Path], tmp_path: Path) -> None:
    source, folder = moved
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        out = tmp_path / "run.rewind"
        result = run("import", source, "-o", out, "--content-root", url)
        assert result.exit_code == 0, result.output
        assert imported_request(out)[1]["choices"][0]["message"]["content"] == "Sunny, 21C."
        missing = run("import", source, "-o", out, "-f", "--content-root", url + "elsewhere/")
        assert missing.exit_code == 1 and "HTTP 404" in missing.output
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_cut_file_is_not_served(tmp_path: Path) -> None:
    refs = upload(tmp_path / "uploads", "jsonl")
    inputs = Path(refs["gen_ai.input.messages_ref"])
    inputs.write_text(inputs.read_text()[:-10])
    out = tmp_path / "run.rewind"
    result = run("import", telemetry(tmp_path, refs), "-o", out)
    assert result.exit_code == 1 and "not JSON" in result.output
