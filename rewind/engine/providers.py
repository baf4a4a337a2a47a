"""Every provider SDK rewind instruments, declared once.

A row names the provider, the module its SDK imports as, its instrumentor (``"module:Class"``,
the same class ``opentelemetry-instrument`` loads through the ``rewind_*`` entry points) and
the environment variables its client reads an API key from. The patching API, placeholder
keys for keyless replay and the "nothing was recorded" diagnosis are all derived from it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class Provider:
    name: str
    #: The import name of the SDK (``mistralai``, ``google.genai``).
    sdk: str
    #: ``"module:Class"`` of its ``BaseInstrumentor``.
    instrumentor: str
    #: The variables its client reads a key from; a placeholder goes into the first when none is set.
    keys: tuple[str, ...] = ()

    def installed(self) -> bool:
        try:
            return importlib.util.find_spec(self.sdk) is not None
        except (ImportError, ValueError):
            return False


PROVIDERS: dict[str, Provider] = {}


def register_provider(name: str, sdk: str, instrumentor: str, keys: tuple[str, ...] = ()) -> None:
    """Make ``name`` known: patchable, and its key variables filled during a keyless replay."""
    PROVIDERS[name] = Provider(name, sdk, instrumentor, keys)


register_provider("openai", "openai", "rewind.instrumentors.openai:OpenAIInstrumentor", ("OPENAI_API_KEY",))
register_provider(
    "anthropic", "anthropic", "rewind.instrumentors.anthropic:AnthropicInstrumentor", ("ANTHROPIC_API_KEY",)
)
register_provider("litellm", "litellm", "rewind.instrumentors.litellm:LiteLLMInstrumentor")
register_provider("groq", "groq", "rewind.instrumentors.groq:GroqInstrumentor", ("GROQ_API_KEY",))
register_provider("together", "together", "rewind.instrumentors.together:TogetherInstrumentor", ("TOGETHER_API_KEY",))
register_provider(
    "fireworks", "fireworks", "rewind.instrumentors.fireworks:FireworksInstrumentor", ("FIREWORKS_API_KEY",)
)
register_provider("mcp", "mcp", "rewind.instrumentors.mcp:MCPInstrumentor")
register_provider("mistral", "mistralai", "rewind.instrumentors.mistral:MistralInstrumentor", ("MISTRAL_API_KEY",))
register_provider("cohere", "cohere", "rewind.instrumentors.cohere:CohereInstrumentor", ("CO_API_KEY",))
# google-genai reads either, and warns when both are set: a placeholder goes into one only when neither is.
register_provider(
    "gemini", "google.genai", "rewind.instrumentors.gemini:GeminiInstrumentor", ("GEMINI_API_KEY", "GOOGLE_API_KEY")
)
register_provider("xai", "xai_sdk", "rewind.instrumentors.xai:XAIInstrumentor")
register_provider("bedrock", "botocore", "rewind.instrumentors.bedrock:BedrockInstrumentor")
