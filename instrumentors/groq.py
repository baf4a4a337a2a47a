"""``GroqInstrumentor``: records and replays the ``groq`` SDK (``rewind_groq`` entry point).

Hooked surfaces, sync and async (``Groq``/``AsyncGroq``, class-level, so clients made
before or after patching are covered): ``chat.completions.create`` (``stream=True`` too,
and through it ``with_raw_response`` / ``with_streaming_response``) and
``embeddings.create``. Groq's SDK is Stainless-generated and speaks the OpenAI wire
format under ``/openai/v1``, so this module is only the table.
"""

from __future__ import annotations

from rewind.engine.providers import ProviderSpec

from ._instrumentor import SurfaceInstrumentor
from ._openai_compat import OpenAICompatibleProvider, chat_route, embeddings_route
from ._stainless_faults import STAINLESS_FAULTS


class GroqProvider(OpenAICompatibleProvider):
    name = "groq"
    package = "groq"
    routes = (
        chat_route(
            "groq.resources.chat.completions",
            "Completions",
            "groq.chat.completions.create",
            path="/openai/v1/chat/completions",
            result="groq.types.chat:ChatCompletion",
            chunk="groq.types.chat:ChatCompletionChunk",
        ),
        embeddings_route(
            "groq.resources.embeddings",
            "Embeddings",
            "groq.embeddings.create",
            path="/openai/v1/embeddings",
            result="groq.types:CreateEmbeddingResponse",
        ),
    )


PROVIDER = GroqProvider()


class GroqInstrumentor(SurfaceInstrumentor):
    """Records and replays calls made through the ``groq`` SDK."""

    provider = PROVIDER
    sdk = "groq"
    minimum = "0.8"


DECLARATION = ProviderSpec(
    name="groq",
    sdk="groq",
    instrumentor="rewind.instrumentors.groq:GroqInstrumentor",
    keys=("GROQ_API_KEY",),
    faults=STAINLESS_FAULTS,
)
