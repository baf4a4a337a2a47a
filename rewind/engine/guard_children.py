"""The network guard, passed on to child processes.

While a ``network="block"`` replay holds the guard, every program the process starts
inherits it through its environment:

* ``REWIND_GUARD_NETWORK=block`` (with ``REWIND_GUARD_ALLOW_HOSTS`` and
  ``REWIND_GUARD_LABEL``): a Python of this environment installs the guard at start-up
  (the ``zz_agent_rewind_otel.pth`` hook calls ``inherit``), before the program runs;
* ``http_proxy``/``https_proxy``/``all_proxy`` (both spellings) naming a dead loopback port
  and ``no_proxy`` naming loopback and the allowed hosts: ``curl``, ``wget``, and Pythons
  without rewind honour them, so their requests fail on loopback instead of going out.

The variables go into the C environment only (``os.putenv``), never into ``os.environ``:
the process holding the guard keeps its own proxy settings, and its libraries meet the
guard's clear error rather than a refused proxy. A child started with an ``env=`` mapping
of its own gets them added to that mapping. The child Python gives its program back the
proxy settings the parent had (its guard stops what they would let out).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

GUARD = "REWIND_GUARD_NETWORK"
ALLOW = "REWIND_GUARD_ALLOW_HOSTS"
LABEL = "REWIND_GUARD_LABEL"
#: The proxy variables the parent had (JSON), for a child Python to restore.
PROXIES_WERE = "REWIND_GUARD_PROXIES_WERE"
#: Port 9 (discard) on loopback: nothing listens, every proxied request is refused at once.
DEAD_PROXY = "http://127.0.0.1:9"
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "FTP_PROXY")
NO_PROXY = ("no_proxy", "NO_PROXY")
VARIABLES = (GUARD, ALLOW, LABEL, PROXIES_WERE, *PROXIES, *NO_PROXY)

_armed: dict[str, str] = {}


def child_variables(label: str, allow_hosts: Iterable[str]) -> dict[str, str]:
    hosts = sorted(allow_hosts)
    were = {name: os.environ[name] for name in (*PROXIES, *NO_PROXY) if name in os.environ}
    bypass = ",".join(["localhost", "127.0.0.1", "::1", *(h[1:] if h.startswith("*.") else h for h in hosts)])
    variables = {GUARD: "block", ALLOW: ",".join(hosts), LABEL: label, PROXIES_WERE: json.dumps(were)}
    variables.update(dict.fromkeys(PROXIES, DEAD_PROXY))
    variables.update(dict.fromkeys(NO_PROXY, bypass))
    return variables


def arm(label: str, allow_hosts: Iterable[str]) -> None:
    """Put the guard's variables in the environment children inherit (not in ``os.environ``)."""
    global _armed
    _armed = child_variables(label, allow_hosts)
    for name, value in _armed.items():
        os.putenv(name, value)


def disarm() -> None:
    """Children inherit the environment as ``os.environ`` has it again."""
    global _armed
    for name in _armed:
        if name in os.environ:
            os.putenv(name, os.environ[name])
        else:
            os.unsetenv(name)
    _armed = {}


def into(env: Any) -> None:
    """Add the guard's variables to an ``env=`` a child is started with (not ``os.environ``)."""
    if not _armed or env is None or env is os.environ or not isinstance(env, dict) or GUARD in env:
        return
    encode = bool(env) and isinstance(next(iter(env)), bytes)
    for name, value in _armed.items():
        env[name.encode() if encode else name] = value.encode() if encode else value


def take_inherited() -> tuple[str, list[str]] | None:
    """In a child Python: the guard its parent held, as ``(label, allowed hosts)``, taken out
    of the environment (the proxies the guard replaced are put back); None when there is none."""
    if os.environ.get(GUARD) != "block":
        return None
    allow = [h for h in os.environ.get(ALLOW, "").split(",") if h]
    label = os.environ.get(LABEL) or "the parent process's replay"
    try:
        were = json.loads(os.environ.get(PROXIES_WERE) or "{}")
    except ValueError:
        were = {}
    for name in VARIABLES:
        os.environ.pop(name, None)
    for name, value in (were if isinstance(were, dict) else {}).items():
        if name in (*PROXIES, *NO_PROXY) and isinstance(value, str):
            os.environ[name] = value
    return label, allow
