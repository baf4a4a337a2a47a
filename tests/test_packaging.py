"""What `pip install` gets is the whole package: build the sdist and the wheel from a clean copy
of the checkout (as a fresh clone would), check their contents, import every module from the wheel.

A hand-written package list once shipped a wheel without ``rewind.what_if``: ``rewind --version``
died with ModuleNotFoundError on every install but the editable one. ``make test-installed`` goes
further: it installs both into clean venvs and runs tests/installed/ against them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from dists import README_WHEEL, REPO, build, problems, source_files


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.fail("tests/test_packaging.py builds from `git ls-files` of the checkout: it needs git and a clone")
    out = tmp_path_factory.mktemp("dist")
    built = build(out, isolated=False)  # offline: the dev extra's setuptools
    assert built.returncode == 0, built.stdout + built.stderr
    # setuptools prints its warnings (a data folder that is no package, …) inside a box of stars.
    assert "*****" not in built.stdout + built.stderr, built.stdout + built.stderr
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz"))}


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_the_distribution_holds_every_module_static_file_and_the_hook(dists: dict[str, Path], kind: str) -> None:
    assert problems(dists[kind]) == []


def test_the_content_check_sees_a_missing_subpackage(dists: dict[str, Path], tmp_path: Path) -> None:
    pruned = tmp_path / dists["wheel"].name
    with zipfile.ZipFile(dists["wheel"]) as whole, zipfile.ZipFile(pruned, "w") as part:
        for item in whole.infolist():
            if not item.filename.startswith("rewind/what_if/"):
                part.writestr(item, whole.read(item))
        part.writestr("stray/__init__.py", "")
    found = problems(pruned)
    assert f"{pruned.name}: missing rewind/what_if/__init__.py" in found
    assert any("stray top-level entry 'stray'" in problem for problem in found)


def test_every_module_of_the_wheel_imports_from_the_wheel(dists: dict[str, Path], tmp_path: Path) -> None:
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        wheel.extractall(tmp_path)
    modules = sorted(
        name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for name in source_files()
        if name.endswith(".py") and not name.endswith("/__main__.py")  # a __main__ runs its program
    )
    code = (
        "import importlib, sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        f"for name in {modules!r}:\n"
        "    module = importlib.import_module(name)\n"
        f"    assert module.__file__.startswith({str(tmp_path)!r}), (name, module.__file__)\n"
        "print(len(sys.modules))\n"
    )
    # -I: neither the checkout (the current folder) nor PYTHONPATH is on sys.path.
    command = [sys.executable, "-I", "-c", code]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_the_readme_builds_and_installs_the_wheel_we_check(dists: dict[str, Path]) -> None:
    readme = (REPO / "README.md").read_text()
    assert "python " + " ".join(README_WHEEL) + " dist ." in readme
    assert f"pip install 'dist/{dists['wheel'].name}[anthropic]'" in readme
