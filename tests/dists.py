"""Build the sdist and the wheel as a fresh clone would, and check them against the source tree.

    python tests/dists.py build OUTDIR      # the sdist, and the wheel as the README says; check both
    python tests/dists.py check FILE...     # check a wheel (.whl) or an sdist (.tar.gz)

Building starts from a clean copy of the checkout (``git ls-files``: tracked files and new
ones not ignored): setuptools reuses an ``*.egg-info`` left in the tree by an editable
install, which once hid a package missing from the wheel.

A wheel must hold every module and data file under ``rewind/`` (and ``instrumentors/`` and
``exporters/`` as ``rewind/instrumentors/`` and ``rewind/exporters/``), the start-up hook
``zz_agent_rewind_otel.pth`` at its root, and nothing else at its root but its ``.dist-info``.
An sdist must hold the same source files under their own folders, plus what building a wheel
from it needs. Exit status 0 when both are right; 1 with one line per problem otherwise.
``check`` uses the standard library only; ``build`` needs ``build`` and ``setuptools``
(the dev extra) in the running Python.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
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


def clean_copy(target: Path, root: Path = REPO) -> Path:
    """The checkout's files as a fresh clone has them: no build/, no egg-info, no caches."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (root / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, target / name)
    return target


# The README's own instruction for building a wheel (tests/test_packaging.py holds it to the README).
README_WHEEL = ["-m", "pip", "wheel", "--no-deps", "-w"]


def build(out: Path, root: Path = REPO, *, isolated: bool = True) -> subprocess.CompletedProcess[str]:
    """The sdist (``python -m build --sdist``) and the wheel the README's way (``pip wheel``).

    ``isolated=False`` builds with the running Python's setuptools instead of fetching one:
    offline, for the test suite.
    """
    with tempfile.TemporaryDirectory(prefix="rewind-dist-") as scratch:
        source = clean_copy(Path(scratch), root)
        offline = [] if isolated else ["--no-isolation"]
        sdist = [sys.executable, "-m", "build", "--sdist", *offline, "--outdir", str(out), str(source)]
        done = subprocess.run(sdist, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            return done
        offline = [] if isolated else ["--no-build-isolation"]
        wheel = [sys.executable, *README_WHEEL, str(out), *offline, "."]
        built = subprocess.run(wheel, cwd=source, capture_output=True, text=True, timeout=300)
        output = (done.stdout + built.stdout, done.stderr + built.stderr)
        return subprocess.CompletedProcess(wheel, built.returncode, *output)


def check(paths: list[Path]) -> int:
    found = [problem for path in paths for problem in problems(path)]
    for problem in found:
        print(problem, file=sys.stderr)
    for path in paths:
        if not any(problem.startswith(path.name) for problem in found):
            print(f"{path.name}: every module, static file and the start-up hook; nothing stray")
    return 1 if found else 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "build":
        out = Path(argv[1]).resolve()
        built = build(out)
        # setuptools prints its warnings (a data folder that is no package, …) in a box of stars.
        if built.returncode != 0 or "*****" in built.stdout + built.stderr:
            print(built.stdout + built.stderr, file=sys.stderr)
            print("building the sdist and the wheel failed or warned (above)", file=sys.stderr)
            return 1
        return check(sorted([*out.glob("*.whl"), *out.glob("*.tar.gz")]))
    if len(argv) > 1 and argv[0] == "check":
        return check([Path(arg) for arg in argv[1:]])
    print("usage: python tests/dists.py build OUTDIR | check FILE...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
