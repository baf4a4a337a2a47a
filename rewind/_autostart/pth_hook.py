"""The one line of ``zz_agent_rewind_otel.pth``, written out readably.

site.py runs each line of a ``.pth`` file that starts with ``import`` and only prints an
exception it raises; then the program runs. So the line costs two environment lookups
when ``REWIND_RECORD``/``REWIND_REPLAY``/``REWIND_GUARD_NETWORK`` are unset and does nothing
else (the last is how a replay's network guard reaches the Python children it starts), and when
one is set it runs ``HOOK``: whatever goes wrong from then on (rewind shadowed by another
distribution, a half-installed copy, a broken OpenTelemetry, a bug) ends the process with
one line and status 2 before the program runs. ``HOOK`` uses the standard library only
until rewind imports. It also registers, before anything else in the process can, the
exit handler that applies a failed replay's exit status (``rewind.bootstrap.exit_status``):
exit handlers run last-registered first, so this one runs after all the others.

``python -m rewind._autostart.pth_hook`` prints the line; tests/_autostart/test_startup_hook.py
checks that the shipped file is that line.
"""

from __future__ import annotations

#: The variables that start the hook (the guard variable reaches the children of a guarded replay).
TRIGGERS = ("REWIND_RECORD", "REWIND_REPLAY", "REWIND_GUARD_NETWORK")

HOOK = """\
import atexit

def _rewind_exit_status():
    import sys
    apply = getattr(sys.modules.get("rewind.setup.bootstrap"), "apply_exit_status", None)
    if apply is not None:
        apply()

atexit.register(_rewind_exit_status)
try:
    from rewind._autostart.startup import run
    run()
except BaseException as exc:
    import os, sys
    owners = []
    try:
        import importlib.metadata
        for dist in importlib.metadata.distributions():
            name = dist.metadata["Name"] or ""
            if name.lower().replace("_", "-") != "agent-rewind-otel" and any(
                str(f) == "rewind/__init__.py" for f in dist.files or ()
            ):
                owners.append((name, dist.version))
    except Exception:
        pass
    if owners:
        names = " ".join(sorted({name for name, _ in owners}))
        found = ", ".join(f"{name} {version}" for name, version in owners)
        fix = (
            f"another distribution owns the rewind package ({found}): pip uninstall {names}, "
            "then pip install --force-reinstall agent-rewind-otel"
        )
    else:
        fix = "reinstall it: pip install --force-reinstall agent-rewind-otel"
    sys.stderr.write(
        f"rewind: cannot start the session: rewind failed to start ({type(exc).__name__}: {exc}); "
        f"the program did not run. {fix[0].upper()}{fix[1:]}; "
        "or unset REWIND_RECORD/REWIND_REPLAY to run without rewind\\n"
    )
    sys.stderr.flush()
    os._exit(2)
"""


def line() -> str:
    """The ``.pth`` file's content."""
    wanted = ' or '.join(f'os.environ.get("{name}")' for name in TRIGGERS)
    return f"import os, sys; ({wanted}) and exec({HOOK!r})\n"


if __name__ == "__main__":
    print(line(), end="")
