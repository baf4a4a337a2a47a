"""Nothing recorded is ever lost or corrupted: failed writes, two recorders, forks onto their source.

Write failures are real: a recorder subprocess lowers its ``RLIMIT_FSIZE`` mid-run, so the
kernel cuts a write short and then fails the rest with ``EFBIG``, exactly where a full
disk would with ``ENOSPC``. When the test runs as root, the same run also goes to a
tiny tmpfs that really fills up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import rewind
from rewind.errors import DivergenceError, RewindError, TraceLockedError
from rewind.storage.archive import compact
from rewind.storage.trace import Trace

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file limits and locks")

REWIND = Path(sys.executable).with_name("rewind")

# The recorder: two steps, then the file may grow by only BUDGET more bytes (a resource
# limit, or a filesystem that is nearly full). A big step fails mid-line, a small one
# still fits, a failed call whose error record is big fails too, and a last small step fits.
RECORDER = """
import os, resource, signal, sys
import rewind
from rewind.archive import compact
from rewind.errors import TraceWriteError

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
path = os.environ["TRACE"]
budget = int(os.environ["BUDGET"])
use_limit = os.environ.get("FILL") is None

@rewind.tool
def step(i, size):
    return "x" * size

@rewind.tool
def broken(i):
    raise ValueError("boom " + "y" * 4000)

def report(what, call, *args):
    try:
        call(*args)
        print(what, "ok")
    except TraceWriteError as exc:
        print(what, "TraceWriteError", type(exc.__cause__).__name__, "|", exc)
    except ValueError:
        print(what, "ValueError")

with rewind.record(path, externalize=int(os.environ["EXTERNALIZE"]) if os.environ.get("EXTERNALIZE") else None) as s:
    step(0, 300)
    step(1, 300)
    if use_limit:
        size = os.path.getsize(path)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + budget, hard))
    else:
        filler = os.path.join(os.path.dirname(path), "filler")
        with open(filler, "wb") as fh:  # fill the disk up to BUDGET bytes of free space
            free = os.statvfs(path).f_bavail * os.statvfs(path).f_frsize
            fh.write(b"\\0" * max(0, free - budget))
    report("big", step, 2, 6000)
    report("small", step, 3, 10)
    report("error", broken, 4)
    report("last", step, 5, 10)
    print("in-memory", [e.seq for e in s.trace.events], [e.seq for e in s.new_events])
"""


def _record(run_python, trace_path: Path, **env: str) -> list[str]:
    result = run_python(RECORDER, env={"TRACE": str(trace_path), **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def _check_survivors(trace_path: Path, outputs: list[str]) -> None:
    by_step = {line.split()[0]: line for line in outputs}
    assert by_step["big"].startswith("big TraceWriteError OSError"), outputs
    assert "step 2" in by_step["big"] and str(trace_path) in by_step["big"]
    assert by_step["small"] == "small ok"
    assert by_step["error"].startswith("error TraceWriteError"), outputs
    assert by_step["last"] == "last ok"
    # The steps whose writes failed are not in the session's trace either.
    assert by_step["in-memory"] == "in-memory [0, 1, 3, 5] [0, 1, 3, 5]"

    raw = trace_path.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.splitlines()
    assert all(isinstance(json.loads(line), dict) for line in lines)  # no partial line, nothing glued
    trace = Trace.load(trace_path)
    assert [e.seq for e in trace] == [0, 1, 3, 5] and not trace.torn_tail
    assert all(e.ok for e in trace)  # the failed call (step 4) is not there to be served
    assert [e.seq for e in Trace.open(trace_path)] == [0, 1, 3, 5]
    for command in (["show", trace_path], ["stats", trace_path], ["diff", trace_path, trace_path]):
        result = subprocess.run([str(REWIND), *map(str, command)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, (command, result.stdout, result.stderr)
    archive = compact(trace_path)
    assert [e.seq for e in Trace.load(archive)] == [0, 1, 3, 5]


def test_a_write_cut_short_is_removed_and_later_steps_are_not_glued(run_python, trace_path: Path) -> None:
    outputs = _record(run_python, trace_path, BUDGET="1500")
    _check_survivors(trace_path, outputs)


def test_a_step_whose_write_failed_is_never_served(run_python, trace_path: Path) -> None:
    _record(run_python, trace_path, BUDGET="1500")

    @rewind.tool(name="step")
    def step(i: int, size: int) -> str:
        return "x" * size

    with pytest.warns(rewind.UnconsumedEventsWarning), rewind.replay(trace_path) as session:
        assert step(0, 300) == step(1, 300) == "x" * 300
        with pytest.raises(DivergenceError):
            step(2, 6000)  # never recorded, so never served as if it had succeeded
    assert session.cursor == 2


def test_a_failed_blob_write_leaves_no_temporary_file(run_python, trace_path: Path) -> None:
    outputs = _record(run_python, trace_path, BUDGET="1500", EXTERNALIZE="1000")
    assert outputs[0].startswith("big TraceWriteError"), outputs
    blob_dir = Path(f"{trace_path}.blobs")
    leftovers = [p.name for p in blob_dir.iterdir() if not all(c in "0123456789abcdef" for c in p.name)]
    assert leftovers == []
    trace = Trace.load(trace_path)
    assert [e.seq for e in trace] == [0, 1, 3, 5]


SDK_RECORDER = """
import os, resource, signal
import openai
import rewind
from rewind.errors import TraceWriteError
from rewind.integrations import patch_openai
from rewind.stub_server import StubServer

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
patch_openai()
path = os.environ["TRACE"]
with StubServer() as server, openai.OpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0) as client:
    def ask(text):
        return client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    with rewind.record(path):
        ask("one")
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + 2500, hard))
        try:
            ask("long " * 2000)
            print("big ok")
        except TraceWriteError as exc:
            print("big TraceWriteError", exc.step)
        print("small", ask("two").choices[0].message.content is not None)
"""


def test_an_sdk_call_whose_step_could_not_be_written_raises_too(run_python, trace_path: Path) -> None:
    pytest.importorskip("openai")
    result = run_python(SDK_RECORDER, env={"TRACE": str(trace_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["big TraceWriteError 1", "small True"]
    assert [e.seq for e in Trace.load(trace_path)] == [0, 2]


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (needs root and a kernel that lets this container mount)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_enospc_is_survived(run_python, tiny_disk: Path) -> None:
    trace_path = tiny_disk / "run.rewind"
    outputs = _record(run_python, trace_path, BUDGET="1500", FILL="1")
    assert "OSError" in outputs[0] and "No space left" in outputs[0], outputs
    (tiny_disk / "filler").unlink()  # readers (compact writes an archive) need room again
    _check_survivors(trace_path, outputs)


# -- two recorders -----------------------------------------------------------------------------

HOLDER = """
import os, sys, time
import rewind
with rewind.record(os.environ["TRACE"]):
    print("recording", flush=True)
    sys.stdin.readline()
"""


def test_a_second_process_recording_to_the_same_path_is_refused(trace_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        env={**os.environ, "TRACE": str(trace_path)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "recording"
        before = trace_path.read_bytes()
        with pytest.raises(TraceLockedError, match="another process") as info, rewind.record(trace_path):
            pass
        assert isinstance(info.value, RewindError) and str(trace_path) in str(info.value)
        assert trace_path.read_bytes() == before  # refused before touching the file
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(30)
    with rewind.record(trace_path):  # free again once the first recorder is done
        pass


def test_two_sessions_of_one_process_recording_to_one_path_are_refused(trace_path: Path) -> None:
    with rewind.record(trace_path), pytest.raises(TraceLockedError), rewind.record(trace_path):
        pass


# -- a fork saved onto its own source ---------------------------------------------------------------


@rewind.tool
def _count(i: int) -> int:
    return i


def test_a_fork_saved_onto_its_own_source_replaces_it_once_done(trace_path: Path) -> None:
    with rewind.record(trace_path):
        for i in range(4):
            _count(i)
    with rewind.fork(trace_path, at=2, save_as=trace_path):
        for i in range(2):
            _count(i)
        _count(100)  # the live suffix differs
        assert [e.seq for e in Trace.load(trace_path)] == [0, 1, 2, 3]  # the source is intact meanwhile
    forked = Trace.load(trace_path)
    assert [e.request["i"] for e in forked] == [0, 1, 100]
    assert forked.header["forked_from"]["at"] == 2
    assert [p.name for p in trace_path.parent.iterdir()] == [trace_path.name]  # no temporary left


def test_a_failed_fork_onto_its_own_source_keeps_the_source(trace_path: Path) -> None:
    with rewind.record(trace_path):
        for i in range(4):
            _count(i)
    before = trace_path.read_bytes()
    with pytest.raises(KeyError), rewind.fork(trace_path, at=2, save_as=str(trace_path)):
        _count(0)
        raise KeyError("agent crashed")
    assert trace_path.read_bytes() == before
    assert [p.name for p in trace_path.parent.iterdir()] == [trace_path.name]
