"""A call's identity is the same in every process, and never lost silently.

Each program records in one interpreter and replays in others started with different
``PYTHONHASHSEED`` values (and different memory layouts), under strict matching.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import rewind
from rewind.data.canonical import fingerprint, to_jsonable
from rewind.errors import IdentityCollisionWarning, LossySerializationWarning

SEEDS = ("1", "2", "4242")

PROGRAM = """
import functools, os, sys, warnings
import pydantic
import rewind
warnings.simplefilter("error", rewind.RewindWarning)
warnings.simplefilter("ignore", rewind.LossySerializationWarning)
warnings.simplefilter("ignore", rewind.UnconsumedEventsWarning)
REPLAY = os.environ["MODE"] == "replay"

def live(value):
    if REPLAY:
        raise AssertionError("replay ran the live function")
    return value

def scale(factor, x):
    return live(factor * x)

class Scorer:
    def __call__(self, text):
        return live(len(text))

class Query(pydantic.BaseModel):
    tags: set[str]
    frozen: frozenset[str]
    ids: set[int]

class Color:
    def __init__(self, value):
        self.value = value
    def __repr__(self):
        return f"<Color 0x{self.value:06x}>"

@rewind.tool
def search(query):
    return live(sorted(query.tags))

@rewind.tool
def paint(color):
    return live(color.value)

@rewind.tool
def lookup(table):
    return live(len(table) if table["1"] == "b" else -len(table))

triple = rewind.tool(functools.partial(scale, 3))
score = rewind.tool(Scorer())

calls = [
    lambda: triple(7),
    lambda: score("hello"),
    lambda: search(Query(tags={"alpha", "beta", "gamma", "delta", "epsilon"}, frozen=set("wxyz"), ids={10, 2})),
    lambda: paint(Color(0xFF0000)),
    lambda: paint(Color(0x00FF00)),
    lambda: lookup({"1": "b", 1: "a"}),
    lambda: lookup({"1": "c", 1: "a"}),
]
match = os.environ.get("MATCH", "strict")
if REPLAY and match == "parallel":
    # Served by identity alone, in the opposite order: two calls whose identities
    # collapsed into one would get each other's answers.
    session = rewind.replay(os.environ["TRACE"], match="parallel")
    with session:
        out = [call() for call in reversed(calls)][::-1]
else:
    session = rewind.replay(os.environ["TRACE"], match="strict") if REPLAY else rewind.record(os.environ["TRACE"])
    with session:
        out = [call() for call in calls]
print(out, session.cursor if REPLAY else len(session.trace))
"""


def _record_then_replay(run_python, trace_path: Path, program: str) -> list[str]:
    recorded = run_python(program, env={"MODE": "record", "TRACE": str(trace_path), "PYTHONHASHSEED": SEEDS[0]})
    assert recorded.returncode == 0, recorded.stderr
    outputs = [recorded.stdout.strip()]
    for seed in SEEDS[1:]:
        for match in ("strict", "parallel"):
            env = {"MODE": "replay", "TRACE": str(trace_path), "PYTHONHASHSEED": seed, "MATCH": match}
            replayed = run_python(program, env=env)
            assert replayed.returncode == 0, replayed.stderr
            outputs.append(replayed.stdout.strip())
    return outputs


def test_every_identity_replays_in_processes_with_other_hash_seeds(run_python, trace_path: Path) -> None:
    outputs = _record_then_replay(run_python, trace_path, PROGRAM)
    expected = "[21, 5, ['alpha', 'beta', 'delta', 'epsilon', 'gamma'], 16711680, 65280, 2, -2] 7"
    assert outputs == [expected] * len(outputs)


def test_partials_and_callable_objects_are_named_without_memory_addresses() -> None:
    import functools

    def scale(factor: int, x: int) -> int:
        return factor * x

    class Scorer:
        def __call__(self, text: str) -> int:
            return len(text)

    triple = rewind.tool(functools.partial(scale, 3))
    score = rewind.tool(Scorer())
    assert "0x" not in triple.__rewind_name__ and triple.__rewind_name__.endswith("scale")
    assert "0x" not in score.__rewind_name__ and score.__rewind_name__.endswith("Scorer")


def test_a_partials_bound_arguments_are_part_of_its_request(trace_path: Path) -> None:
    import functools

    def scale(factor: int, x: int) -> int:
        return factor * x

    double = rewind.tool(functools.partial(scale, 2))
    triple = rewind.tool(functools.partial(scale, 3))
    with rewind.record(trace_path) as session:
        assert (double(5), triple(5)) == (10, 15)
    requests = [event.request for event in session.trace]
    assert requests == [{"factor": 2, "x": 5}, {"factor": 3, "x": 5}]


def test_colliding_dict_keys_are_both_kept_with_a_warning() -> None:
    with pytest.warns(LossySerializationWarning, match=r"request\.table.*'1'"):
        converted = to_jsonable({"table": {1: "a", "1": "b"}}, where="request")
    assert converted == {"table": {"1": "b", "1 (int)": "a"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LossySerializationWarning)
        # Independent of insertion order, and the two values are not confused.
        assert fingerprint(to_jsonable({1: "a", "1": "b"})) == fingerprint(to_jsonable({"1": "b", 1: "a"}))
        assert fingerprint(to_jsonable({1: "a", "1": "b"})) != fingerprint(to_jsonable({1: "b", "1": "a"}))


def test_meaningful_hex_in_a_repr_is_kept_and_addresses_are_not() -> None:
    class Color:
        def __init__(self, value: int) -> None:
            self.value = value

        def __repr__(self) -> str:
            return f"<Color 0x{self.value:06x}>"

    class Thing:
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LossySerializationWarning)
        assert to_jsonable(Color(0xFF0000)) == "<Color 0xff0000>"
        assert to_jsonable(Color(0xFF0000)) != to_jsonable(Color(0x00FF00))
        assert to_jsonable(Thing()) == to_jsonable(Thing())  # "<... object at 0x7f…>": the address goes
        assert "0x…" in to_jsonable(Thing())


def test_two_functions_recording_under_one_name_in_a_run_warn(trace_path: Path) -> None:
    class Web:
        @rewind.tool(name="search")
        def run(self, query: str) -> str:
            return "web"

    class Docs:
        @rewind.tool(name="search")
        def run(self, query: str) -> str:
            return "docs"

    collision = pytest.warns(IdentityCollisionWarning, match=r"Web\.run.*Docs\.run|Docs\.run.*Web\.run")
    with collision, rewind.record(trace_path):
        assert Web().run("q") == "web"
        assert Docs().run("q") == "docs"
        Web().run("q")  # once per name and session


class Web:
    @rewind.tool(name="search")
    def run(self, query: str) -> str:
        return f"web: {query}"


class Docs:
    @rewind.tool(name="search")
    def run(self, query: str) -> str:
        return f"docs: {query}"


def test_a_step_recorded_by_another_function_of_the_same_name_is_named_across_runs(trace_path: Path) -> None:
    # Issue 35: each class records alone, so no run sees both; a replay served Docs the
    # answer Web recorded without a word.
    with rewind.record(trace_path):
        Web().run("q")
    assert rewind.Trace.load(trace_path).events[0].get("function") == f"{__name__}:Web.run"
    served = pytest.warns(
        IdentityCollisionWarning, match=rf"recorded by {__name__}:Web\.run and is served to .*Docs\.run"
    )
    with served, rewind.replay(trace_path):
        assert Docs().run("q") == "web: q"  # the documented contract: the name is the identity
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path):
        Docs().run("other")
    assert f"recorded by: {__name__}:Web.run, not {__name__}:Docs.run" in str(info.value)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentityCollisionWarning)
        with rewind.replay(trace_path):
            assert Web().run("q") == "web: q"  # the function that recorded it: no word


def test_rewind_check_names_the_functions_sharing_a_name(trace_path: Path) -> None:
    from click.testing import CliRunner

    from rewind.cli import cli

    with pytest.warns(IdentityCollisionWarning), rewind.record(trace_path):
        Web().run("a")
        Docs().run("b")
        Web().run("c")
    result = CliRunner().invoke(cli, ["--no-pager", "check", "--json", str(trace_path)])
    assert result.exit_code == 0, result.output  # degraded, still replayable
    import json

    steps = json.loads(result.output)["results"]
    assert [s["status"] for s in steps] == ["degraded"] * 3
    (problem,) = steps[1]["problems"]
    assert problem["code"] == "shared_name"
    assert f"recorded by {__name__}:Docs.run, but {__name__}:Web.run (step 0) also recorded" in problem["detail"]
    strict = CliRunner().invoke(cli, ["--no-pager", "check", "--strict", str(trace_path)])
    assert strict.exit_code == 1 and "shared_name" in strict.output


def test_the_same_function_on_many_instances_does_not_warn(trace_path: Path) -> None:
    class Web:
        @rewind.tool(name="search")
        def run(self, query: str) -> str:
            return "web"

    with rewind.record(trace_path):
        Web().run("a")
        Web().run("b")


class _PinnedModel:  # built lazily: pydantic is a test dependency, not a runtime one
    @staticmethod
    def build() -> object:
        import pydantic

        class M(pydantic.BaseModel):
            items: list[str]
            ids: set[int]
            nested: dict[str, tuple[int, ...]]

        return M(items=["i", "j"], ids={10, 2, 33}, nested={"a": (1, 2)})


def test_fingerprints_of_values_handled_before_did_not_change() -> None:
    """Pinned fingerprints (computed with the code before these fixes): traces recorded
    before still replay. Only spellings that were process-dependent or colliding changed."""
    import dataclasses

    @dataclasses.dataclass
    class D:
        name: str
        tags: frozenset[str]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LossySerializationWarning)
        pinned = {
            "plain": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 1.5},
            "sets": {"s": {"b", "a", "c"}, "f": frozenset({3, 1, 2}), "t": (1, (2, 3))},
            "bytes": {"u": b"text", "h": b"\xff\x00"},
            "keys": {(1, 2): "tuple", 3: "int", None: "none"},
            "object": {"o": object(), "f": print},
            "model": {"m": _PinnedModel.build()},  # a set of numbers kept pydantic's (stable) order
            "dataclass": D(name="n", tags=frozenset({"x", "y"})),
        }
        prints = {name: fingerprint(to_jsonable(value)) for name, value in pinned.items()}
    assert prints == {
        "plain": "c892d108cbdb982fcfc66df8d1eed42d77465a3e27e74c29a392c105711c71bb",
        "sets": "ed726110e6edb32580793db45224ec16801deca641d59c33ab1997b287497e6c",
        "bytes": "0c07af7f16a0ef6231a97c4a3b8abad79c0f73a6a3d6e1683c4a17e484a80aa7",
        "keys": "6c53ea09465c3bb4d3382df5a152dd10b97fa1c538a2c85a06b2203cbd7673f1",
        "object": "05f418ddc95c924b9d3dffc741dc90a49c4c9f74183d5c9571f82edf68470c67",
        "model": "0d18edfc4677d015864ad0e606f3cdbffd0def897681a401b18c534d2887b668",
        "dataclass": "871fc141c00438e2073eb666f2c85c37279d8671377f489dddbd17d2bd7f0f59",
    }


def test_one_function_run_as_a_script_and_imported_by_a_test_is_the_same_function() -> None:
    from rewind.data.function_names import same_function

    assert same_function("__main__:step", "test_crash:test_kill.<locals>.step")
    assert same_function("__main__:Web.run", "agent:Web.run")
    assert not same_function("agent:Web.run", "agent:Docs.run")
