"""DSPy's ReAct module, unmodified, on ``dspy.LM`` (litellm underneath) against the stub server.

DSPy's ChatAdapter asks the model for ``[[ ## field ## ]]`` sections, not native tool
calls, so the stub is scripted with the text a model would answer; the tool is the
program's own code and really runs. DSPy's caches are turned off with its documented
switches (``dspy.configure_cache`` and ``cache=False``), so the record run reaches the model.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("dspy")


def _turn(**fields: str) -> str:
    sections = [f"[[ ## {name} ## ]]\n{value}" for name, value in fields.items()]
    return "\n\n".join([*sections, "[[ ## completed ## ]]"])


def test_react_calls_a_tool_and_answers(battery: Any, tools: Any) -> None:
    import dspy

    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Rainy and 9C in {city}"

    battery.stub.add_script(
        _turn(
            next_thought="I should look up the weather.",
            next_tool_name="get_weather",
            next_tool_args='{"city": "Oslo"}',
        ),
        _turn(next_thought="I know the weather now.", next_tool_name="finish", next_tool_args="{}"),
        _turn(reasoning="The tool said it is rainy.", answer="Oslo is rainy, 9C."),
    )

    def agent() -> tuple[str, list[str]]:
        dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
        lm = dspy.LM("openai/gpt-4o-mini", api_base=battery.stub.openai_base_url, cache=False, num_retries=0)
        react = dspy.ReAct("question -> answer", tools=[get_weather])
        with dspy.context(lm=lm):
            prediction = react(question="What is the weather in Oslo?")
        observations = [str(v) for k, v in prediction.trajectory.items() if k.startswith("observation")]
        return str(prediction.answer), observations

    answer, observations = battery.run(agent, providers=("litellm", "openai"))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Oslo is rainy, 9C."
    assert observations[0] == "Rainy and 9C in Oslo"
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "litellm.completion")] * 3
    assert battery.stub.request_count == 3


def test_streamify_streams_the_answer_of_an_async_program(battery: Any, tools: Any) -> None:
    """``dspy.streamify`` with a StreamListener: async litellm streams, the answer field token by token.

    streamify runs the (sync) ReAct program on a worker thread and its LM calls as async
    litellm streams, so the tool is a plain function (an async tool would need acall).
    """
    import asyncio

    import dspy
    from dspy.streaming import StreamListener, StreamResponse

    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Rainy and 9C in {city}"

    battery.stub.add_script(
        _turn(next_thought="Look it up.", next_tool_name="get_weather", next_tool_args='{"city": "Oslo"}'),
        _turn(next_thought="Done.", next_tool_name="finish", next_tool_args="{}"),
        _turn(reasoning="The tool said it is rainy.", answer="Oslo is rainy and cold today."),
    )

    async def main() -> tuple[str, list[str]]:
        dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
        lm = dspy.LM("openai/gpt-4o-mini", api_base=battery.stub.openai_base_url, cache=False, num_retries=0)
        react = dspy.ReAct("question -> answer", tools=[get_weather])
        program = dspy.streamify(react, stream_listeners=[StreamListener(signature_field_name="answer")])
        chunks: list[str] = []
        final = None
        with dspy.context(lm=lm):
            async for item in program(question="What is the weather in Oslo?"):
                if isinstance(item, StreamResponse):
                    chunks.append(item.chunk)
                elif isinstance(item, dspy.Prediction):
                    final = item
        assert final is not None
        return str(final.answer), [str(final.trajectory["observation_0"]), *chunks]

    answer, (observation, *chunks) = battery.run(lambda: asyncio.run(main()), providers=("litellm", "openai"))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert observation == "Rainy and 9C in Oslo"
    assert answer == "Oslo is rainy and cold today."
    assert len(chunks) > 1 and "".join(chunks).strip() == answer
    steps = battery.steps
    assert [(e.kind, e.name) for e in steps] == [("llm", "litellm.completion")] * 3
    # Only the predictor a listener watches (ReAct's final extract step) is streamed.
    assert [bool(e.request.get("stream")) for e in steps] == [False, False, True]


def test_batch_on_dspy_threads_needs_patch_thread_pool(battery: Any, tools: Any) -> None:
    """``Module.batch(..., num_threads=3)`` runs on DSPy's own ThreadPoolExecutor.

    Its workers start with an empty context, outside the recording session: without
    ``rewind.patch_thread_pool()`` rewind flags every call (``ThreadlessCallWarning``, an
    error under this suite's filterwarnings), and DSPy reports the failed examples. With it,
    the three calls record, and replay under ``match="parallel"`` in whatever order the
    threads ask.
    """
    import dspy

    import rewind

    questions = ("Oslo?", "Lima?", "Pune?")
    battery.stub.add_script(*[_turn(answer="Sunny.")] * len(questions))

    def agent() -> list[str]:
        dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
        lm = dspy.LM("openai/gpt-4o-mini", api_base=battery.stub.openai_base_url, cache=False, num_retries=0)
        predict = dspy.Predict("question -> answer")
        examples = [dspy.Example(question=q).with_inputs("question") for q in questions]
        with dspy.context(lm=lm):
            results = predict.batch(examples, num_threads=3, disable_progress_bar=True, max_errors=0)
        return [str(r.answer) for r in results]

    unpatch = rewind.patch_thread_pool()
    try:
        answers = battery.run(agent, providers=("litellm", "openai"), match="parallel")
    finally:
        unpatch()
    assert answers == ["Sunny."] * 3
    steps = battery.steps
    assert [e.name for e in steps] == ["litellm.completion"] * 3
    asked = sorted(m["content"] for e in steps for m in e.request["messages"] if m["role"] == "user")
    assert [q for q in questions if any(q in text for text in asked)] == list(questions)


def test_batch_without_patch_thread_pool_is_flagged_not_recorded(battery: Any, tmp_path: Any) -> None:
    """The unhappy path: DSPy's workers are outside the session, and rewind says so for each call."""
    import dspy

    import rewind
    from rewind.errors import ThreadlessCallWarning

    battery.stub.add_script(*[_turn(answer="Sunny.")] * 2)
    trace = tmp_path / "unpatched.rewind"
    unpatch = rewind.auto_patch("litellm", "openai")
    try:
        dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
        lm = dspy.LM("openai/gpt-4o-mini", api_base=battery.stub.openai_base_url, cache=False, num_retries=0)
        examples = [dspy.Example(question=q).with_inputs("question") for q in ("Oslo?", "Lima?")]
        flagged = pytest.warns(ThreadlessCallWarning, match="ThreadPoolExecutor")
        with flagged, rewind.record(trace), dspy.context(lm=lm):
            results = dspy.Predict("question -> answer").batch(examples, num_threads=2, disable_progress_bar=True)
    finally:
        unpatch()
    assert [str(r.answer) for r in results] == ["Sunny.", "Sunny."]  # they ran live...
    assert battery.stub.request_count == 2
    assert rewind.Trace.load(trace).events == []  # ...and nothing was recorded
