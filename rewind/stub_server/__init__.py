"""A deterministic loopback model server speaking several providers' wire formats.

The real ``openai``, ``anthropic``, ``mistralai``, ``cohere``, ``google-genai`` and
``boto3`` (Bedrock runtime) SDKs can be pointed at it (one ``*_base_url`` property
each) and parse its answers into their own types, which makes it the shared fake
backend for tests, examples, ``make demo`` and anyone who wants to try rewind
without an API key::

    with StubServer() as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="stub")
        client.chat.completions.create(model="gpt-4o-mini", messages=[...])

It is deliberately stdlib only and imports nothing else from ``rewind``, so it
keeps working while the rest of the package changes, and so it can run anywhere
with ``python -m rewind.stub_server``.

Layout: ``_http`` (server, routing, streams), ``_script`` (scripted turns and
injected errors), ``_brain`` (the provider-neutral answer), ``_server`` (the
public class), ``_cli``; then one module per wire format. A new format is one
module that subclasses ``WireFormat``, registers its routes, and is imported
below.
"""

from __future__ import annotations

# Each import registers its wire format with the HTTP core.
from . import anthropic as anthropic
from . import bedrock as bedrock
from . import cohere as cohere
from . import gemini as gemini
from . import mistral as mistral
from . import openai as openai
from ._cli import main
from ._http import StubRequest
from ._server import StubServer

__all__ = ["StubRequest", "StubServer", "main"]
