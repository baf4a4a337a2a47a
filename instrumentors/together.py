"""``TogetherInstrumentor``: records and replays the ``together`` SDK (``rewind_together`` entry point).

Hooked surfaces, sync and async (``Together``/``AsyncTogether``, class-level, so clients
made before or after patching are covered): ``chat.completions.create`` (``stream=True``
too, and through it ``with_raw_response`` / ``with_streaming_response``) and
``embeddings.create``.

Only the Stainless-generated SDK (``together`` 2.0 and later) is covered; the hand-written
1.x SDK has a different layout and is left alone with a ``PatchGapWarning``. Its naming
traps: resource classes end in ``Resource`` (``CompletionsResource``,
``EmbeddingsResource``) and the embeddings response type is ``together.types.Embedding``
(not ``CreateEmbeddingResponse``).
"""

from __future__ import annotations

from rewind.engine.providers import ProviderSpec

from ._instrumentor import SurfaceInstrumentor
from ._openai_compat import OpenAICompatibleProvider, chat_route, embeddings_route
from ._stainless_faults import STAINLESS_FAULTS


class TogetherProvider(OpenAICompatibleProvider):
    name = "together_ai"
    package = "together"
    routes = (
        chat_route(
            "together.resources.chat.completions",
            "CompletionsResource",
            "together.chat.completions.create",
            path="/v1/chat/completions",
            result="together.types.chat:ChatCompletion",
            chunk="together.types.chat:ChatCompletionChunk",
        ),
        embeddings_route(
            "together.resources.embeddings",
            "EmbeddingsResource",
            "together.embeddings.create",
            path="/v1/embeddings",
            result="together.types:Embedding",
        ),
    )


PROVIDER = TogetherProvider()


class TogetherInstrumentor(SurfaceInstrumentor):
    """Records and replays calls made through the ``together`` SDK."""

    provider = PROVIDER
    sdk = "together"
    minimum = "2.0"


DECLARATION = ProviderSpec(
    name="together",
    sdk="together",
    instrumentor="rewind.instrumentors.together:TogetherInstrumentor",
    keys=("TOGETHER_API_KEY",),
    faults=STAINLESS_FAULTS,
)
