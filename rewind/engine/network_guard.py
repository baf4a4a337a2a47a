"""The offline guard: while a ``network="block"`` replay is open, nothing reaches the network.

A replay serves every recorded call from the trace, but code rewind does not see (an
undecorated tool calling a weather API, a library fetching a file) would still go
out. The guard makes "offline" a guarantee: it wraps the places every Python network
connection passes through,

* ``socket.socket.connect`` / ``connect_ex`` (plain and TLS sockets, any thread),
* ``socket.create_connection`` and ``socket.getaddrinfo`` (name resolution is traffic too),
* asyncio's ``loop.create_connection`` and ``loop.sock_connect``,

and, through an audit hook (``sys.addaudithook``), what CPython's socket module does
underneath them: ``connect`` of any socket (``_socket.socket`` too), ``sendto``/``sendmsg``
(UDP, ``MSG_FASTOPEN``), and the resolver (``gethostbyname(_ex)``, ``gethostbyaddr``,
``getnameinfo``, ``getaddrinfo``). It refuses a connection to any host that is not
loopback (``localhost``, ``127.0.0.0/8``, ``::1``), a Unix socket, or on the allow-list,
with a ``NetworkBlockedError`` naming the host and the code that tried.

Child processes inherit it (``guard_children``; ``inherit`` below): Pythons of this environment install it at
start-up, and every child gets proxy variables pointing at a dead loopback port, so a
``curl`` or a Python without rewind that honours them cannot reach the world either.
What no Python code can stop (a C library's own ``connect()``, ctypes, a program that
ignores proxy variables) is listed in docs/what-if.md, "Offline, guaranteed".

It is installed when the first blocking session opens and removed when the last one
closes (the audit hook stays, idle); it is process-wide while installed (threads do not
share a session's context, and the point is that they cannot escape). Exporters of
OpenTelemetry (``opentelemetry.exporter.*``) keep their connections: sending telemetry
is not the agent reaching the world.
"""

from __future__ import annotations

import asyncio.base_events
import asyncio.selector_events
import ipaddress
import os
import socket
import sys
import sysconfig
import threading
from collections.abc import Iterable, Sequence
from types import FrameType
from typing import Any

from rewind.errors import RewindError

from . import guard_children as _guard_children

NETWORK_MODES = ("allow", "block")
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class NetworkBlockedError(RewindError):
    """A connection was attempted during a replay that blocks the network.

    Not an ``OSError`` on purpose: network code that retries on connection errors
    would hide it; this is a hole in the test's isolation, not a network condition.
    """

    def __init__(self, message: str, *, host: str, port: Any, where: str) -> None:
        super().__init__(message)
        self.host = host
        self.port = port
        self.where = where


def check_network(network: str, allow_hosts: Iterable[str] | str = ()) -> str:
    """``network`` when it is ``"allow"`` or ``"block"``; a clear ``ValueError`` otherwise."""
    if network not in NETWORK_MODES:
        raise ValueError(f"network= must be 'block' or 'allow', not {network!r}")
    if isinstance(allow_hosts, str) or not all(isinstance(h, str) and h for h in allow_hosts):
        raise TypeError(f"allow_hosts= must be a list of host names or addresses, not {allow_hosts!r}")
    return network


# --------------------------------------------------------------------------- state


class _Guard:
    """Holders of the guard and the originals it wraps (one per process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders: list[Hold] = []
        self.allowed_ips: set[str] = set()
        self.originals: dict[tuple[Any, str], Any] = {}
        #: The audit hook cannot be removed: it is added once and idles while nobody holds the guard.
        self.audit_hook_added = False

    def allowed_names(self) -> frozenset[str]:
        names: set[str] = set()
        for hold in self.holders:
            names |= hold.hosts
        return frozenset(names)

    def label(self) -> str:
        return self.holders[0].label if self.holders else "a replay"


_GUARD = _Guard()


class Hold:
    """One session's hold on the guard: call it (or ``release()``) to let go."""

    def __init__(self, label: str, hosts: frozenset[str]) -> None:
        self.label = label
        self.hosts = hosts
        #: Every connection refused while this hold was in place (even ones the program swallowed).
        self.blocked: list[NetworkBlockedError] = []

    def release(self) -> None:
        with _GUARD.lock:
            if self not in _GUARD.holders:
                return
            _GUARD.holders.remove(self)
            if not _GUARD.holders:
                _uninstall()
                _GUARD.allowed_ips.clear()
                _guard_children.disarm()
            else:
                _guard_children.arm(_GUARD.label(), _GUARD.allowed_names())

    __call__ = release


#: The hold a child Python keeps on its parent's guard for its whole life.
_inherited: Hold | None = None


def inherit() -> None:
    """In a child Python: hold the guard its parent held, for the whole life of the process."""
    global _inherited
    if _inherited is not None:
        return
    taken = _guard_children.take_inherited()
    if taken is not None:
        label, allow = taken
        child = os.path.basename(sys.argv[0] or "python")
        _inherited = block(f"{label} (inherited by this child process, {child})", allow)


def block(label: str, allow_hosts: Sequence[str] = ()) -> Hold:
    """Block the network until the returned hold is released (reference-counted)."""
    hold = Hold(label, frozenset(_norm(h) for h in allow_hosts))
    with _GUARD.lock:
        if not _GUARD.holders:
            _install()
        _GUARD.holders.append(hold)
        _guard_children.arm(_GUARD.label(), _GUARD.allowed_names())
    return hold


def allowed(host: str) -> bool:
    """Whether a connection to ``host`` would pass the guard now (always, when it is not installed)."""
    return _is_allowed(host)


def active() -> bool:
    """True while some session blocks the network."""
    return bool(_GUARD.holders)


# --------------------------------------------------------------------------- the decision


def _norm(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.rstrip(".")


def _is_allowed(host: Any) -> bool:
    if host is None or host == "" or not _GUARD.holders:
        return True
    if isinstance(host, (bytes, bytearray, memoryview)):
        host = bytes(host).decode("ascii", "replace")
    if not isinstance(host, str):
        return True  # not an internet address (a Unix socket path was caught earlier)
    name = _norm(host)
    # Only the names every resolver answers from /etc/hosts: "x.localhost" is a DNS query.
    if name in _LOCAL_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        ip = None
    if ip is not None:
        mapped = getattr(ip, "ipv4_mapped", None)
        if ip.is_loopback or ip.is_unspecified or (mapped is not None and mapped.is_loopback):
            return True
        if str(ip) in _GUARD.allowed_ips:
            return True
    for allowed in _GUARD.allowed_names():
        if name == allowed or (allowed.startswith("*.") and name.endswith(allowed[1:])):
            return True
    return False


def _check(host: Any, port: Any) -> None:
    if _is_allowed(host) or _from_exporter():
        return
    if isinstance(host, (bytes, bytearray, memoryview)):
        host = bytes(host).decode("ascii", "replace")
    where, via = _culprit()
    shown = f"{host}:{port}" if port not in (None, "", 0) else str(host)
    via_text = f", via {via}" if via else ""
    message = (
        f"rewind: network blocked: a connection to {shown} was attempted by {where}{via_text} during the "
        f"network='block' replay of {_GUARD.label()}. A replay answers only what the trace recorded: record "
        "that call (@rewind.tool, or the SDK's patch) so it is served, allow the host "
        f"(allow_hosts=[{str(host)!r}], --allow-host {host}), or pass network='allow' (--network allow)."
    )
    error = NetworkBlockedError(message, host=str(host), port=port, where=where)
    for hold in list(_GUARD.holders):
        hold.blocked.append(error)
    raise error


def _address_host(address: Any) -> tuple[Any, Any] | None:
    """(host, port) of an internet socket address, ``None`` for anything else (Unix sockets)."""
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], (str, bytes, bytearray)):
        return address[0], address[1]
    return None


# --------------------------------------------------------------------------- who tried


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths.get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # all of rewind/
    return tuple(os.path.abspath(d) + os.sep for d in (*dirs, here) if d)


_LIBRARIES: tuple[str, ...] | None = None
#: Modules every connection passes through: never what the program called.
_PLUMBING = ("socket", "asyncio", "ssl", "selectors", "concurrent", "threading", "contextlib", "functools")


def _culprit() -> tuple[str, str]:
    """The innermost frame of the program's own code, and the library it went through.

    A connection made in a task of its own (anyio's happy-eyeballs, say) has no program
    frame on its stack: then the innermost library frame is named instead.
    """
    global _LIBRARIES
    if _LIBRARIES is None:
        _LIBRARIES = _library_dirs()
    frame: FrameType | None = sys._getframe(2)
    library = ""
    fallback = ""
    while frame is not None:
        raw = frame.f_code.co_filename
        module = str(frame.f_globals.get("__name__", ""))
        if module == __name__:
            frame = frame.f_back
            continue
        filename = raw if raw.startswith("<") else os.path.abspath(raw)
        described = f"{frame.f_code.co_name} ({filename}:{frame.f_lineno})"
        if not (filename.startswith(_LIBRARIES) or filename.startswith("<")):
            return described, library
        if module and module != "__main__" and not module.startswith(_PLUMBING):
            library = module.split(".")[0]  # the outermost library before the program's code
            fallback = fallback or described
        frame = frame.f_back
    return fallback or "unknown code", ""


def _from_exporter() -> bool:
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("opentelemetry.exporter"):
            return True
        frame = frame.f_back
    return False


# --------------------------------------------------------------------------- the wrappers


def _install() -> None:
    if not _GUARD.audit_hook_added:
        sys.addaudithook(_audit)
        _GUARD.audit_hook_added = True
    sock_cls = socket.socket
    originals = _GUARD.originals
    originals[(sock_cls, "connect")] = sock_cls.connect
    originals[(sock_cls, "connect_ex")] = sock_cls.connect_ex
    originals[(socket, "create_connection")] = socket.create_connection
    originals[(socket, "getaddrinfo")] = socket.getaddrinfo
    loop_cls = asyncio.base_events.BaseEventLoop
    originals[(loop_cls, "create_connection")] = loop_cls.create_connection
    # The selector loop defines its own sock_connect (it resolves the name first).
    candidates = (loop_cls, asyncio.selector_events.BaseSelectorEventLoop)
    sock_connect_owners = [owner for owner in candidates if "sock_connect" in vars(owner)]
    for owner in sock_connect_owners:
        originals[(owner, "sock_connect")] = vars(owner)["sock_connect"]

    connect, connect_ex = sock_cls.connect, sock_cls.connect_ex
    create_connection, getaddrinfo = socket.create_connection, socket.getaddrinfo
    loop_create = loop_cls.create_connection

    def guarded_connect(self: socket.socket, address: Any) -> None:
        target = _address_host(address)
        if target is not None:
            _check(*target)
        return connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        target = _address_host(address)
        if target is not None:
            _check(*target)
        return connect_ex(self, address)

    def guarded_create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        target = _address_host(address)
        if target is not None:
            _check(*target)
        return create_connection(address, *args, **kwargs)

    def guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        _check(host, port)
        results = getaddrinfo(host, port, *args, **kwargs)
        if host is not None and _GUARD.holders and not _is_loopback_name(host):
            # An allowed name: the addresses it resolves to may be connected to.
            for *_, sockaddr in results:
                if isinstance(sockaddr, tuple) and sockaddr:
                    _GUARD.allowed_ips.add(str(sockaddr[0]).split("%", 1)[0])
        return results

    async def guarded_loop_create(
        self: Any, protocol_factory: Any, host: Any = None, port: Any = None, **kw: Any
    ) -> Any:
        _check(host, port)
        return await loop_create(self, protocol_factory, host, port, **kw)

    def guarded_sock_connect(original: Any) -> Any:
        async def sock_connect(self: Any, sock: Any, address: Any) -> None:
            target = _address_host(address)
            if target is not None:
                _check(*target)
            return await original(self, sock, address)

        return sock_connect

    wrappers: list[tuple[Any, str, Any]] = [
        (sock_cls, "connect", guarded_connect),
        (sock_cls, "connect_ex", guarded_connect_ex),
        (socket, "create_connection", guarded_create_connection),
        (socket, "getaddrinfo", guarded_getaddrinfo),
        (loop_cls, "create_connection", guarded_loop_create),
    ]
    for owner in sock_connect_owners:
        wrappers.append((owner, "sock_connect", guarded_sock_connect(originals[(owner, "sock_connect")])))
    for owner, name, wrapper in wrappers:
        setattr(owner, name, wrapper)


#: Audit events of CPython's socket module that reach the network, and where their host is.
_AUDITED_ADDRESS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg"})
_AUDITED_NAME = frozenset({"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr"})
#: Audit events starting a program with an environment of its own, and where that environment is.
_SPAWNS = {"subprocess.Popen": 3, "os.exec": 2, "os.posix_spawn": 2, "os.spawn": 3}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Checks what the wrappers cannot see: the C socket type, UDP sends, the resolver.

    Runs for every audit event of the process, so it returns at once unless the guard is
    held and the event is one of the socket module's.
    """
    if not _GUARD.holders:
        return
    if event in _SPAWNS:
        _guard_children.into(args[_SPAWNS[event]] if len(args) > _SPAWNS[event] else None)
        return
    if not event.startswith("socket."):
        return
    if event in _AUDITED_ADDRESS:
        target = _address_host(args[1]) if len(args) > 1 else None
        if target is not None:
            _check(*target)
    elif event in _AUDITED_NAME:
        if args and args[0] is not None:
            _check(args[0], args[1] if event == "socket.getaddrinfo" and len(args) > 1 else None)
    elif event == "socket.getnameinfo":
        target = _address_host(args[0]) if args else None
        if target is not None:
            _check(*target)


def _is_loopback_name(host: Any) -> bool:
    return isinstance(host, str) and _norm(host) in _LOCAL_NAMES


def _uninstall() -> None:
    for (owner, name), original in _GUARD.originals.items():
        setattr(owner, name, original)
    _GUARD.originals.clear()


__all__ = ["NETWORK_MODES", "Hold", "NetworkBlockedError", "active", "allowed", "block", "check_network"]
