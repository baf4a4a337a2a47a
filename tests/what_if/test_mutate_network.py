"""``rewind mutate`` and ``rewind.what_if.mutate`` keep the runs offline, and hold a
program's output in bounded memory. The runs that could reach out run in a network
namespace of their own (``tests/hostile/guard.py``), so a miss never reaches the wire."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewind.stub_server import StubServer
from tests.hostile.agents import FALLS_BACK_TO_RAW_HTTP, OFF_HOST, PRINTS_A_LOT
from tests.hostile.guard import netns

TESTS = Path(__file__).resolve().parent.parent
REWIND = Path(sys.executable).with_name("rewind")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REWIND_", "OTEL_"))}
    env.update({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "stub", "PYTHONPATH": str(TESTS)})
    env.update(extra)
    return env


def _golden(tmp_path: Path, program: Path) -> Path:
    import what_if_agent

    path = tmp_path / "golden.rewind"
    with StubServer(script=what_if_agent.SCRIPT) as server:
        done = subprocess.run(
            [str(REWIND), "record", str(path), "--", sys.executable, str(program)],
            env=_env(OPENAI_BASE_URL=server.openai_base_url),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    return path


def _mutate(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        netns([str(REWIND), "mutate", *args]), env=_env(**env), capture_output=True, text=True, timeout=180, check=False
    )


@pytest.fixture(scope="module")
def fallback(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("fallback")
    program = folder / "agent.py"
    program.write_text(FALLS_BACK_TO_RAW_HTTP)
    return program, _golden(folder, program)


def test_a_fault_handler_reaching_out_is_a_crash_not_a_recovery(fallback: tuple[Path, Path]) -> None:
    program, golden = fallback
    done = _mutate(str(golden), "--step", "0", "-f", "server_error", "--json", "--", sys.executable, str(program))
    assert done.returncode == 1, done.stdout + done.stderr
    [result] = json.loads(done.stdout)["results"]
    assert result["outcome"] == "crashed"
    assert result["error"] == "rewind.engine.network_guard.NetworkBlockedError"
    assert f"tried to reach {OFF_HOST}:80" in result["detail"]


def test_rewind_network_allow_from_the_environment_is_honoured(fallback: tuple[Path, Path]) -> None:
    program, golden = fallback
    done = _mutate(
        str(golden), "--step", "0", "-f", "server_error", "--json", "--", sys.executable, str(program),
        REWIND_NETWORK="allow",
    )  # fmt: skip
    [result] = json.loads(done.stdout)["results"]
    assert result["outcome"] == "different"  # let out (the namespace had no route): "recovered"


def test_the_python_api_blocks_the_network_by_default(tmp_path: Path) -> None:
    golden = tmp_path / "golden.rewind"
    script = tmp_path / "api.py"
    script.write_text(
        "import sys, urllib.request, what_if_agent as a\n"
        "import rewind\n"
        "from rewind.what_if import mutate\n"
        "rewind.patch_openai()\n"
        f"a.record(__import__('pathlib').Path({str(golden)!r}))\n"
        "def agent():\n"
        "    try:\n"
        "        return a.run_agent(a.client('http://127.0.0.1:9/v1'))\n"
        "    except Exception:\n"
        "        try:\n"
        f"            urllib.request.urlopen('http://{OFF_HOST}/', timeout=3)\n"
        "        except Exception:\n"
        "            pass\n"
        "        return 'fallback'\n"
        f"report = mutate({str(golden)!r}, agent, faults=['server_error'], steps=[0])\n"
        "[result] = report.results\n"
        "print(result.outcome, result.detail)\n"
    )
    done = subprocess.run(
        netns([sys.executable, str(script)]), env=_env(), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"crashed NetworkBlockedError: tried to reach {OFF_HOST}:80 (the network is blocked)"


def test_a_hundred_and_fifty_megabytes_of_output_cost_no_more_memory(tmp_path: Path) -> None:
    program = tmp_path / "agent.py"
    program.write_text(PRINTS_A_LOT)
    golden = _golden(tmp_path, program)
    measure = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n"
        "sys.stderr.write(done.stdout.decode()[-2000:] + done.stderr.decode()[-2000:])\n"
    )
    args = [str(REWIND), "mutate", str(golden), "--step", "0", "-f", "rate_limit", "--retry-after", "0.01"]
    done = subprocess.run(
        [sys.executable, "-c", measure, *args, "--", sys.executable, str(program)],
        env=_env(MEGABYTES="150"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    status, peak_mb = map(int, done.stdout.split())
    assert status == 0, done.stderr
    assert "recovered, same answer" in done.stderr
    assert peak_mb < 300, f"peak RSS {peak_mb} MB"  # 150 MB of output held whole took over 600 MB
