"""Run every ```python sample of one Markdown document, in order, with sybil.

    python tests/doc_samples.py docs/recording.md

``tests/test_docs.py`` runs this once per document, each in a fresh process (samples
patch SDKs, set tracer providers and change directories: none of it may leak into the
test run or into the next document). The conventions a sample can rely on are in the
README's "Documentation samples" section:

- samples of one document run top to bottom in one namespace, in a fresh temporary
  working folder, with the loopback stub server running;
- the namespace holds ``rewind`` (imported), ``stub`` (that ``StubServer``), ``agent`` (a small flight agent:
  ``agent.run(task)`` with decorated calls, ``agent.run(client)`` / ``agent.run(client,
  task)`` with an OpenAI or Anthropic client), ``task``, and ``sha``, ``scrub``,
  ``drop_volatile`` (stand-ins a document may define for real further down);
- the folder holds ``run.rewind`` (a recording of ``agent.run(task)``), ``old.rewind`` (the
  same) and ``a.rewind`` / ``b.rewind`` (two runs that diverge at step 0);
- ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` point at the stub and every known SDK key
  variable holds a dummy, so ``openai.OpenAI()`` works as written; other providers' samples
  pass ``stub.<provider>_base_url`` themselves;
- a sample whose first line is ``# partial: why`` is only compiled (it must be valid
  Python), not run; one whose first line is ``# file: PATH`` is compiled and written to
  PATH in the working folder, for later samples to import.

Exit status 0 when every sample ran; 1 with ``DOC:LINE`` and the traceback of the first
failing sample otherwise.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser

MARKER = re.compile(r"\A#\s*(partial|file):\s*(\S.*)?$")


class DemoAgent:
    """The ``agent`` of the doc samples: plans a trip with a model, then searches flights."""

    def run(self, client: Any = None, task: str = "find me a flight to Lisbon") -> str:
        if isinstance(client, str):
            client, task = None, client
        if client is None:
            return self._decorated(task)
        module = type(client).__module__
        if module.startswith("openai"):
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": task}])
            return str(reply.choices[0].message.content)
        if module.startswith("anthropic"):
            message = client.messages.create(
                model="claude-stub", max_tokens=64, messages=[{"role": "user", "content": task}]
            )
            return str(message.content[0].text)
        raise TypeError(f"the doc agent drives an openai or anthropic client, not {type(client).__name__}")

    def _decorated(self, task: str) -> str:
        import rewind

        @rewind.llm(name="plan")
        def plan(**request: Any) -> dict[str, str]:
            return {"content": "Fly to " + request["messages"][-1]["content"].split()[-1] + "."}

        @rewind.tool(name="search_flights")
        def search_flights(city: str) -> list[str]:
            return [f"RW100 to {city}", f"RW200 to {city}"]

        @rewind.llm(name="answer")
        def answer(**request: Any) -> dict[str, str]:
            return {"content": "Booked " + request["options"][0] + "."}

        step = plan(model="demo", messages=[{"role": "user", "content": task}])
        flights = search_flights(step["content"].split()[-1].rstrip("."))
        return answer(model="demo", options=flights)["content"]


def _identity(payload: Any) -> Any:
    return payload


def _prepare(folder: Path, stub: Any) -> dict[str, Any]:
    """The working folder's traces and the namespace every sample starts from."""
    import rewind

    agent, task = DemoAgent(), "find me a flight to Lisbon"
    for name, run_task in (("run", task), ("old", task), ("a", task), ("b", "find me a flight to Porto")):
        with rewind.record(folder / f"{name}.rewind"):
            agent.run(run_task)
    return {
        "rewind": rewind,
        "stub": stub,
        "agent": agent,
        "task": task,
        "sha": "4f2a9c1",
        "scrub": _identity,
        "drop_volatile": _identity,
    }


def _evaluator(path: Path) -> Any:
    def evaluate(example: Example) -> None:
        source: str = example.parsed
        # Pad so that tracebacks and syntax errors give the line in the document.
        code = compile("\n" * example.line + source, str(path), "exec")
        first = source.lstrip().splitlines()[0] if source.strip() else ""
        marker = MARKER.match(first)
        if marker is None:
            exec(code, example.namespace)
        elif marker.group(1) == "file":
            target = Path(marker.group(2) or "")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source)

    return evaluate


def main(document: str) -> int:
    from rewind.stub_server import StubServer

    path = Path(document).resolve()
    sybil = Sybil(parsers=[CodeBlockParser(language="python", evaluator=_evaluator(path))])
    parsed = sybil.parse(path)
    with tempfile.TemporaryDirectory(prefix="rewind-docs-") as folder, StubServer() as stub:
        os.chdir(folder)
        sys.path.insert(0, folder)  # `# file:` samples are importable
        os.environ.update(
            OPENAI_BASE_URL=stub.openai_base_url,
            ANTHROPIC_BASE_URL=stub.anthropic_base_url,
            PYTHONBREAKPOINT="0",  # break_at= samples must not wait for a debugger
        )
        from rewind.engine.placeholder_keys import SDK_KEYS

        for names in SDK_KEYS:
            os.environ.setdefault(names[0], "doc-sample-key")
        namespace = _prepare(Path(folder), stub)
        for example in parsed.examples():
            example.namespace.update({k: v for k, v in namespace.items() if k not in example.namespace})
            try:
                example.evaluate()
            except BaseException:
                sys.stdout.flush()
                sys.stderr.write(f"{path.name}:{example.line + 1}: this sample failed\n")
                traceback.print_exc()
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
