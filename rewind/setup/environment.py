"""Reading the ``REWIND_*`` variables into options: every value is checked, nothing is started.

``parse_session`` turns the variables that describe a session into a ``SessionOptions``
(or ``None`` when none is asked for); ``parse_exit`` reads the ones that say what happens
at exit into an ``ExitOptions``. Each value is checked where it is read, with the same
validators ``record()``/``replay()``/``fork()`` use, so a value rewind cannot use raises an
``EnvironmentConfigError`` that names its variable; building the session from the options
(``rewind.setup.bootstrap``) then has no variable left to blame.

Reading has two side effects, both part of checking a value: ``REWIND_REDACT`` and
``REWIND_NORMALIZE`` import the function they name, and ``REWIND_EDIT`` reads its file.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rewind.data.safe_read import file_kind
from rewind.engine.network_guard import check_network
from rewind.engine.policy import ENVIRONMENT as POLICY
from rewind.engine.policy import ReplayPolicy
from rewind.engine.session import Normalizer, Redactor
from rewind.errors import RewindError
from rewind.matching import resolve_matcher
from rewind.what_if.matcher import THEN

TRUTHY = {"1", "true", "yes", "on"}
FALSY = {"", "0", "false", "no", "off"}

#: Variables describing the session; the process that opens it removes them from its environment.
SESSION_VARIABLES = (
    "REWIND_RECORD",
    "REWIND_REPLAY",
    "REWIND_MATCH",
    "REWIND_REQUIRE_FULL_CONSUMPTION",
    "REWIND_TOLERATE_DRIFT",
    "REWIND_BREAK_AT",
    "REWIND_FORK_AT",
    "REWIND_SAVE_AS",
    "REWIND_EDIT",
    "REWIND_THEN",
    "REWIND_REFRESH",
    "REWIND_FAULT",
    "REWIND_LIVE",
    "REWIND_NEVER_LIVE",
    "REWIND_ON_MISSING",
    "REWIND_MODEL_MAP",
    "REWIND_NETWORK",
    "REWIND_ALLOW_HOSTS",
    "REWIND_META",
    "REWIND_EXTERNALIZE",
    "REWIND_REDACT",
    "REWIND_NORMALIZE",
    "REWIND_STATUS_FILE",
    "REWIND_QUIET",
    "REWIND_EXIT_ON_DIVERGENCE",
    "REWIND_SESSION_PID",
)

#: Variables that only a replay (or a fork of one) reads.
REPLAY_ONLY = ("REWIND_FORK_AT", "REWIND_SAVE_AS", "REWIND_BREAK_AT", "REWIND_EDIT", "REWIND_FAULT", *POLICY)

#: What a session from the environment does: a recording, a plain (or hybrid) replay, a
#: fork, a fork that edits its fork step, a refresh, or a replay that injects a fault.
SessionKind = Literal["record", "replay", "fork", "edit", "refresh", "fault"]


class EnvironmentConfigError(RewindError):
    """A ``REWIND_*`` variable has a value rewind cannot use."""


@dataclass(frozen=True)
class SessionOptions:
    """The session the variables describe, every value checked; fields a kind does not use keep their defaults.

    ``path`` is the trace to record to (``record``) or to start from (every other kind).
    """

    kind: SessionKind
    path: str
    redact: Redactor | None = None
    normalize: Normalizer | None = None
    # record
    meta: dict[str, Any] | None = None
    externalize: int | None = None
    # replay and what starts from one
    match: str = "strict"
    policy: ReplayPolicy | None = None
    require_full_consumption: bool = False
    tolerate_drift: bool = False
    break_at: int | None = None
    network: str = "allow"
    allow_hosts: tuple[str, ...] = ()
    save_as: str | None = None
    fork_at: int | None = None
    # edit: the outcome read from ``edit_file``, and what runs after it
    edit: Any = None
    edit_file: str | None = None
    then: str = "live"
    # fault: the JSON ``rewind mutate`` wrote, checked when the session is built
    fault: str | None = None


@dataclass(frozen=True)
class ExitOptions:
    """What happens when the program ends: where the summary goes, whether it is printed, the exit status."""

    status_file: str | None = None
    quiet: bool = False
    exit_on_divergence: bool = True


def target(env: Mapping[str, str]) -> str:
    """The trace the environment's session records to or starts from (``""`` when none)."""
    return env.get("REWIND_RECORD") or env.get("REWIND_REPLAY") or ""


def parse_exit(env: Mapping[str, str]) -> ExitOptions:
    """``REWIND_STATUS_FILE``, ``REWIND_QUIET``, ``REWIND_EXIT_ON_DIVERGENCE``: read at exit, so checked now.

    A bad value found only at exit would be a traceback and status 0.
    """
    return ExitOptions(
        quiet=flag(env, "REWIND_QUIET"),
        exit_on_divergence=flag(env, "REWIND_EXIT_ON_DIVERGENCE", default=True),
        status_file=status_file(env),
    )


def parse_session(env: Mapping[str, str]) -> SessionOptions | None:
    """The session the ``REWIND_*`` variables describe, or ``None`` when they ask for none."""
    record_path, replay_path = env.get("REWIND_RECORD"), env.get("REWIND_REPLAY")
    if record_path and replay_path:
        raise EnvironmentConfigError("set REWIND_RECORD or REWIND_REPLAY, not both")
    if not record_path and not replay_path:
        for name in REPLAY_ONLY:
            if env.get(name):
                raise EnvironmentConfigError(f"{name} needs REWIND_REPLAY (the trace to start from)")
        return None
    redact = import_named(env, "REWIND_REDACT")
    normalize = import_named(env, "REWIND_NORMALIZE")
    if record_path:
        for name in REPLAY_ONLY:
            if env.get(name):
                raise EnvironmentConfigError(f"{name} applies to REWIND_REPLAY, not REWIND_RECORD")
        return SessionOptions(
            "record",
            record_path,
            redact=redact,
            normalize=normalize,
            meta=_meta(env),
            externalize=step(env, "REWIND_EXTERNALIZE", minimum=1),
        )
    assert replay_path
    return _parse_replay(env, replay_path, redact, normalize)


def _parse_replay(
    env: Mapping[str, str], path: str, redact: Redactor | None, normalize: Normalizer | None
) -> SessionOptions:
    """``REWIND_REPLAY`` and the variables that turn it into a fork, an edit, a refresh or a fault."""
    policy = _policy(env)
    hybrid = policy is not None and policy.hybrid
    match = env.get("REWIND_MATCH") or ("parallel" if hybrid else "strict")
    positional = _positional(match)
    full = flag(env, "REWIND_REQUIRE_FULL_CONSUMPTION")
    tolerate_drift = flag(env, "REWIND_TOLERATE_DRIFT")
    break_at = step(env, "REWIND_BREAK_AT")
    fork_at = step(env, "REWIND_FORK_AT")
    save_as = env.get("REWIND_SAVE_AS") or None
    edit_file = env.get("REWIND_EDIT") or None
    then = _then(env)
    fault = env.get("REWIND_FAULT") or None
    network, allow_hosts = _network(env)
    refresh = flag(env, "REWIND_REFRESH")
    common: dict[str, Any] = {"redact": redact, "normalize": normalize, "match": match}

    if fault is not None:
        if policy is not None:
            raise EnvironmentConfigError("REWIND_FAULT replays offline: it takes no REWIND_LIVE/REWIND_NEVER_LIVE")
        return SessionOptions("fault", path, fault=fault, network=network, allow_hosts=allow_hosts, **common)
    if refresh:
        if save_as is None or fork_at is not None or edit_file is not None:
            raise EnvironmentConfigError(
                "REWIND_REFRESH needs REWIND_SAVE_AS (where the refreshed run goes) and no REWIND_FORK_AT "
                "or REWIND_EDIT (a refresh goes live where the run first diverges)"
            )
        if not positional:
            raise EnvironmentConfigError(
                f"REWIND_MATCH: a refresh needs match='strict' or 'ordered' (positional), not {match!r}"
            )
        return SessionOptions("refresh", path, save_as=save_as, **common)
    if fork_at is None:
        if save_as is not None and not hybrid:
            raise EnvironmentConfigError(
                "REWIND_SAVE_AS needs REWIND_FORK_AT (the step where the run goes live) or REWIND_LIVE (a hybrid run)"
            )
        if edit_file is not None:
            raise EnvironmentConfigError("REWIND_EDIT needs REWIND_FORK_AT (the step to edit)")
        if hybrid and positional:
            raise EnvironmentConfigError(
                f"REWIND_MATCH: a hybrid replay (REWIND_LIVE, REWIND_ON_MISSING=live) serves the rest of the run "
                f"by identity, so REWIND_MATCH must be 'parallel' or 'fuzzy', not {match!r}: the live side shifts "
                "every position"
            )
        return SessionOptions(
            "replay",
            path,
            policy=policy,
            require_full_consumption=full,
            tolerate_drift=tolerate_drift,
            break_at=break_at,
            network=network,
            allow_hosts=allow_hosts,
            save_as=save_as,
            **common,
        )
    for name, value in (("REWIND_REQUIRE_FULL_CONSUMPTION", full), ("REWIND_BREAK_AT", break_at)):
        if value:
            raise EnvironmentConfigError(f"{name} applies to a plain replay, not to REWIND_FORK_AT")
    if hybrid:
        name = "REWIND_LIVE" if env.get("REWIND_LIVE") else "REWIND_ON_MISSING"
        raise EnvironmentConfigError(
            f"{name}: REWIND_FORK_AT runs everything after its fork point live; REWIND_LIVE and "
            "REWIND_ON_MISSING apply to a plain replay (a fork takes only REWIND_NEVER_LIVE)"
        )
    fork = SessionOptions("fork", path, fork_at=fork_at, save_as=save_as, policy=policy, **common)
    if edit_file is None:
        return fork
    if not positional:
        raise EnvironmentConfigError(
            f"REWIND_MATCH: REWIND_EDIT needs match='strict' or 'ordered' (positional), not {match!r}"
        )
    return SessionOptions(
        "edit",
        path,
        fork_at=fork_at,
        save_as=save_as,
        policy=policy,
        edit=_edit(edit_file),
        edit_file=edit_file,
        then=then,
        **common,
    )


def _policy(env: Mapping[str, str]) -> ReplayPolicy | None:
    """``REWIND_LIVE`` & co.; each is checked on its own, so an error names the variable it is about."""
    for name, argument in zip(POLICY, ("live", "never_live", "on_missing", "model_map"), strict=True):
        value = env.get(name)
        if value:
            try:
                ReplayPolicy.of(**{argument: value})
            except ValueError as exc:
                raise EnvironmentConfigError(f"{name}: {exc}") from None
    return ReplayPolicy.from_environment(env)


def _positional(match: str) -> bool:
    """Whether the strategy ``REWIND_MATCH`` names serves steps in recorded order."""
    try:
        return bool(getattr(resolve_matcher(match), "positional", False))
    except ValueError as exc:  # an unknown strategy name
        raise EnvironmentConfigError(f"REWIND_MATCH: {exc}") from None


def _then(env: Mapping[str, str]) -> str:
    then = env.get("REWIND_THEN") or "live"
    if then not in THEN:
        choices = ", ".join(repr(t) for t in THEN)
        raise EnvironmentConfigError(f"REWIND_THEN: must be one of {choices} (what runs after the edit), not {then!r}")
    return then


def _network(env: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    network = env.get("REWIND_NETWORK") or "allow"
    allow_hosts = tuple(h.strip() for h in (env.get("REWIND_ALLOW_HOSTS") or "").split(",") if h.strip())
    try:
        check_network(network, allow_hosts)
    except ValueError as exc:
        raise EnvironmentConfigError(f"REWIND_NETWORK: {exc}") from None
    return network, allow_hosts


def _edit(path: str) -> Any:
    """The outcome the ``REWIND_EDIT`` file holds (its errors name the file)."""
    from rewind.what_if.edits import EditError, load_edit_file

    try:
        return load_edit_file(path)
    except EditError as exc:
        raise EnvironmentConfigError(str(exc)) from None


def _meta(env: Mapping[str, str]) -> dict[str, Any] | None:
    raw = env.get("REWIND_META")
    if not raw:
        return None
    try:
        meta = json.loads(raw)
    except ValueError as exc:
        raise EnvironmentConfigError(f"REWIND_META must be a JSON object ({exc})") from None
    if not isinstance(meta, dict):
        raise EnvironmentConfigError("REWIND_META must be a JSON object")
    return meta


def flag(env: Mapping[str, str], name: str, *, default: bool = False) -> bool:
    """The yes/no variable ``name`` (unset or empty: ``default``)."""
    raw = env.get(name)
    value = (raw or "").strip().lower()
    if not value:
        return default
    if value in TRUTHY:
        return True
    if value in FALSY:
        return False
    raise EnvironmentConfigError(f"{name} must be 1 or 0, not {raw!r}")


def status_file(env: Mapping[str, str]) -> str | None:
    """``REWIND_STATUS_FILE``, checked now: at exit a directory would be ignored and a FIFO would hang."""
    path = env.get("REWIND_STATUS_FILE") or None
    if path is None:
        return None
    try:
        kind = file_kind(os.stat(path).st_mode)
    except OSError:
        kind = None  # written at exit: a folder that is missing then is reported then
    if kind is not None:
        raise EnvironmentConfigError(f"REWIND_STATUS_FILE={path} is {kind}; name a file to write the summary to")
    return path


def step(env: Mapping[str, str], name: str, *, minimum: int = 0) -> int | None:
    """The whole number ``name`` holds (``None`` when unset), at least ``minimum``."""
    raw = env.get(name)
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise EnvironmentConfigError(f"{name} must be a whole number >= {minimum}, not {raw!r}")
    return value


def import_named(env: Mapping[str, str], name: str) -> Callable[[Any], Any] | None:
    """The function the variable ``name`` names as ``module:attribute`` (``None`` when unset)."""
    spec = env.get(name)
    if not spec:
        return None
    return import_callable(spec, name)


def import_callable(spec: str, name: str) -> Callable[[Any], Any]:
    """The function ``module:attribute`` names; ``name`` (a variable, an option) says who asked.

    The working directory is searched too: at interpreter start-up the script's folder is
    not on ``sys.path`` yet.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise EnvironmentConfigError(f"{name} must be module:function, not {spec!r}")
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.append(cwd)
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise EnvironmentConfigError(f"{name}={spec}: cannot import it ({exc})") from None
    finally:
        if added:
            sys.path.remove(cwd)
    if not callable(found):
        raise EnvironmentConfigError(f"{name}={spec} is a {type(found).__name__}, not a function")
    return found
