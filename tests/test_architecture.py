"""rewind's shape holds: layers that import one way, no import cycles, old import paths alive.

The contracts live in pyproject.toml (``[tool.importlinter]``) and docs/architecture.md draws
them. They are checked here over the package as it installs: ``instrumentors/`` and
``exporters/`` sit inside ``rewind/`` as ``rewind.instrumentors`` and ``rewind.exporters``,
so their imports of the core and the core's imports of them are all in one graph.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rewind import _moved

REPO = Path(__file__).resolve().parent.parent
LIMIT = 700  # lines in one module


@pytest.fixture(scope="module")
def installed_layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``rewind/`` with ``instrumentors/`` and ``exporters/`` where setuptools puts them."""
    root = tmp_path_factory.mktemp("layout")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "rewind", root / "rewind", ignore=ignore)
    for folder in ("instrumentors", "exporters"):
        shutil.copytree(REPO / folder, root / "rewind" / folder, ignore=ignore)
    return root


def _lint(layout: Path, config: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run(
        [sys.executable, "-c", code, str(config), "--no-cache"],
        cwd=layout,
        env={"PYTHONPATH": str(layout), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_import_contract_is_kept(installed_layout: Path) -> None:
    result = _lint(installed_layout, REPO / "pyproject.toml")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "0 broken" in output, output


def test_the_contracts_ignore_no_import() -> None:
    text = (REPO / "pyproject.toml").read_text()
    section = text[text.index("[tool.importlinter]") :]
    assert "ignore_imports" not in section
    assert 'root_packages = ["rewind"]' in section


def test_a_broken_layer_fails_the_check(installed_layout: Path, tmp_path: Path) -> None:
    """The check can fail: storage importing the engine (upward) is reported."""
    layout = tmp_path / "broken"
    shutil.copytree(installed_layout, layout)
    archive = layout / "rewind" / "storage" / "archive.py"
    archive.write_text(archive.read_text() + "\n\ndef _upward() -> None:\n    from rewind.engine import core  # noqa\n")
    result = _lint(layout, REPO / "pyproject.toml")
    assert result.returncode != 0
    assert "rewind.storage is not allowed to import rewind.engine" in result.stdout


def test_no_module_is_over_the_line_limit() -> None:
    long = {}
    for folder in ("rewind", "instrumentors", "exporters"):
        for path in (REPO / folder).rglob("*.py"):
            lines = len(path.read_text().splitlines())
            if lines > LIMIT:
                long[str(path.relative_to(REPO))] = lines
    assert not long, f"split these modules (over {LIMIT} lines): {long}"


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_import_path_from_before_the_folders_still_imports(old: str) -> None:
    module = importlib.import_module(old)
    assert module is importlib.import_module(_moved.MOVED[old])
    assert sys.modules[old] is module
    assert module.__spec__ is not None and module.__spec__.name == _moved.MOVED[old]  # its own, not the alias's


def test_a_module_first_imported_by_its_old_name_keeps_its_own_spec() -> None:
    """Relative imports inside it must not warn ``__package__ != __spec__.parent``."""
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import rewind.session as s\n"
        "import rewind.divergence\n"
        "assert s.__spec__.name == 'rewind.engine.session', s.__spec__\n"
        "s.session_policy(None, None, None, 'error', None)  # runs a relative import inside a function\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


def test_old_paths_work_in_a_fresh_interpreter_and_keep_the_facade_intact() -> None:
    """``import rewind.replay`` (a module path once) must not turn ``rewind.replay()`` into a module,
    and ``from rewind.trace import Trace`` must give the one ``Trace`` class."""
    code = (
        "import rewind.replay, rewind.trace, rewind.archive\n"
        "from rewind.trace import Trace\n"
        "from rewind.network_guard import allowed\n"
        "from rewind.session import current_session\n"
        "import rewind, rewind.storage.trace as new\n"
        "assert callable(rewind.replay) and not isinstance(rewind.replay, type(rewind)), rewind.replay\n"
        "assert Trace is new.Trace is rewind.Trace\n"
        "assert rewind.archive.compact is rewind.storage.archive.compact\n"
        "assert rewind.integrations.patched is rewind.setup.integrations.patched\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


def test_an_unknown_old_name_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rewind.no_such_module")
    assert _moved.new_name("rewind.trace.sub") == "rewind.storage.trace.sub"
    assert _moved.new_name("rewind.nothing") is None
