"""``FireworksInstrumentor``: records and replays the ``fireworks-ai`` SDK (``rewind_fireworks`` entry point).

Hooked surface, sync and async (``Fireworks``/``AsyncFireworks``, class-level, so clients
made before or after patching are covered): ``chat.completions.create`` (``stream=True``
too, and through it ``with_raw_response`` / ``with_streaming_response``). The SDK has no
embeddings resource.

Only the Stainless-generated SDK (``fireworks-ai`` 1.x, import name ``fireworks``) is
covered; the 0.x ``fireworks.client`` package is left alone with a ``PatchGapWarning``.
Its naming trap: the chat completion type is ``fireworks.types.chat.CompletionCreateResponse``;
the top-level ``fireworks.types.CompletionCreateResponse`` of the same short name is the
legacy ``/v1/completions`` response.
"""

from __future__ import annotations

from rewind.engine.providers import ProviderSpec

from ._instrumentor import SurfaceInstrumentor
from ._openai_compat import OpenAICompatibleProvider, chat_route
from ._stainless_faults import STAINLESS_FAULTS


class FireworksProvider(OpenAICompatibleProvider):
    name = "fireworks"
    package = "fireworks"
    routes = (
        chat_route(
            "fireworks.resources.chat.completions",
            "CompletionsResource",
            "fireworks.chat.completions.create",
            path="/v1/chat/completions",
            result="fireworks.types.chat:CompletionCreateResponse",
            chunk="fireworks.types.chat:ChatCompletionChunk",
        ),
    )


PROVIDER = FireworksProvider()


class FireworksInstrumentor(SurfaceInstrumentor):
    """Records and replays calls made through the ``fireworks-ai`` SDK."""

    provider = PROVIDER
    sdk = "fireworks"
    distribution = "fireworks-ai"
    minimum = "1.2"


DECLARATION = ProviderSpec(
    name="fireworks",
    sdk="fireworks",
    instrumentor="rewind.instrumentors.fireworks:FireworksInstrumentor",
    keys=("FIREWORKS_API_KEY",),
    faults=STAINLESS_FAULTS,
)
