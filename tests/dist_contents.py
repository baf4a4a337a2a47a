"""Check a built wheel or sdist against the source tree it was built from.

    python tests/dist_contents.py dist/agent_rewind_otel-*.whl dist/agent_rewind_otel-*.tar.gz

A wheel must hold every module and data file under ``rewind/`` (and ``instrumentors/`` and
``exporters/`` as ``rewind/instrumentors/`` and ``rewind/exporters/``), the start-up hook
``zz_agent_rewind_otel.pth`` at its root, and nothing else at its root but its ``.dist-info``.
An sdist must hold the same source files under their own folders, plus what building a wheel
from it needs. Exit status 0 when both are right; 1 with one line per problem otherwise.
Standard library only: CI runs it before anything is installed.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parent.parent
PTH = "zz_agent_rewind_otel.pth"
# Source folder -> where its files sit inside the installed `rewind` package.
SOURCE_FOLDERS = {"rewind": "rewind", "instrumentors": "rewind/instrumentors", "exporters": "rewind/exporters"}
# What an sdist needs besides the packages' files to build the wheel users install.
SDIST_FILES = {"setup.py", "pyproject.toml", "PKG-INFO", "README.md", "LICENSE"}
# Top-level folders an sdist may hold: the three source folders, setuptools' egg-info and the
# tests setuptools adds by itself (tests/test*.py). Anything else is stray.
SDIST_FOLDERS = {*SOURCE_FOLDERS, "tests"}


def source_files(root: Path = REPO) -> dict[str, str]:
    """Every shipped file of the source tree: its path in the wheel -> its path in the sdist."""
    files: dict[str, str] = {}
    for folder, installed in SOURCE_FOLDERS.items():
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix in {".pyc", ".pyo"}:
                continue
            inner = path.relative_to(root / folder).as_posix()
            files[f"{installed}/{inner}"] = f"{folder}/{inner}"
    return files


def wheel_problems(wheel: Path, root: Path = REPO) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        names = {name for name in archive.namelist() if not name.endswith("/")}
    problems = [f"{wheel.name}: missing {name}" for name in sorted(set(source_files(root)) - names)]
    if PTH not in names:
        problems.append(f"{wheel.name}: missing the start-up hook {PTH} at its root")
    for top in sorted({PurePosixPath(name).parts[0] for name in names}):
        if top not in {"rewind", PTH} and not top.endswith(".dist-info"):
            problems.append(f"{wheel.name}: stray top-level entry {top!r} (only rewind, {PTH} and .dist-info)")
    return problems


def sdist_problems(sdist: Path, root: Path = REPO) -> list[str]:
    with tarfile.open(sdist) as archive:
        members = [member.name for member in archive.getmembers() if member.isfile()]
    # Every member sits in one folder named after the release: agent_rewind_otel-0.1.0/...
    names = {PurePosixPath(*PurePosixPath(name).parts[1:]).as_posix() for name in members}
    expected = set(source_files(root).values()) | SDIST_FILES
    problems = [f"{sdist.name}: missing {name}" for name in sorted(expected - names)]
    for name in sorted(names):
        parts = PurePosixPath(name).parts
        if len(parts) > 1 and parts[0] not in SDIST_FOLDERS and not parts[0].endswith(".egg-info"):
            problems.append(f"{sdist.name}: stray file {name}")
    return problems


def problems(path: Path, root: Path = REPO) -> list[str]:
    if path.name.endswith(".whl"):
        return wheel_problems(path, root)
    if path.name.endswith(".tar.gz"):
        return sdist_problems(path, root)
    return [f"{path}: neither a wheel (.whl) nor an sdist (.tar.gz)"]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    found = [problem for arg in argv for problem in problems(Path(arg))]
    for problem in found:
        print(problem, file=sys.stderr)
    for arg in argv:
        if not any(problem.startswith(Path(arg).name) for problem in found):
            print(f"{Path(arg).name}: every module, static file and the start-up hook; nothing stray")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
