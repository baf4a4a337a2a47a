"""The guard's former holes (``tests/hostile/guard.py``): UDP sends, the C socket type, a
bytearray host, ``MSG_FASTOPEN``, the resolver's other entry points, and child processes
(Python through subprocess, ``os.system`` and multiprocessing spawn, and ``curl``). Each
probe runs in a network namespace of its own, so a miss never reaches the wire."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rewind
from rewind.engine import guard_children as _guard_children
from rewind.engine import network_guard
from tests.hostile.guard import CHILD, PROBES, netns, run_probe


@pytest.mark.parametrize("name", sorted(PROBES))
def test_the_guard_refuses_before_any_packet(name: str, tmp_path: Path) -> None:
    done = run_probe(name, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1:] == ["BLOCKED"], done.stdout + done.stderr


def test_a_child_of_rewind_replay_network_block_inherits_the_guard(tmp_path: Path) -> None:
    golden = tmp_path / "empty.rewind"
    with rewind.record(golden):
        pass
    (tmp_path / "child.py").write_text(CHILD)
    parent = tmp_path / "parent.py"
    parent.write_text(
        "import subprocess, sys\n"
        f"print(subprocess.run([sys.executable, {str(tmp_path / 'child.py')!r}], capture_output=True, "
        "text=True).stdout)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWIND_")}
    code = "import sys; from rewind.cli import main; main()"
    args = [sys.executable, "-c", code, "replay", str(golden), "--network", "block", "--", sys.executable, str(parent)]
    done = subprocess.run(netns(args), capture_output=True, text=True, timeout=90, env=env, check=False)
    assert "BLOCKED" in done.stdout, done.stdout + done.stderr


def test_the_guard_variables_reach_children_only_while_it_is_held() -> None:
    before = dict(os.environ)
    hold = network_guard.block("a test", ["api.internal.example"])
    try:
        assert dict(os.environ) == before  # this process keeps its own proxy settings
        shown = subprocess.run(
            [sys.executable, "-S", "-c", "import os; print(os.environ.get('https_proxy'), os.environ.get('no_proxy'))"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
        assert shown == [_guard_children.DEAD_PROXY, "localhost,127.0.0.1,::1,api.internal.example"]
    finally:
        hold.release()
    after = subprocess.run(
        [sys.executable, "-S", "-c", "import os; print(os.environ.get('REWIND_GUARD_NETWORK'))"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.strip()
    assert after == str(os.environ.get("REWIND_GUARD_NETWORK"))
