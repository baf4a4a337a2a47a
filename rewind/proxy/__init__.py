"""``rewind proxy``: record and replay agents in any language that speak the providers' HTTP APIs.

An agent points its SDK's base URL at the proxy (no TLS interception). Recording, the
proxy forwards each request to the real provider and records the exchange; replaying,
it answers from the trace with no upstream at all. Each exchange is a ``Call`` of the
interception core, named and shaped as the provider's Python instrumentor records the same
call, so a proxied run shows, diffs, reports and replays like any other (docs/proxy.md).

One module per job: ``_routes`` (which provider call a request is), ``_upstream``
(forwarding), ``_exchange`` (one exchange recorded or replayed), ``_server`` (the HTTP
server and its session).

Above what-if: may import the engine and what lies below, and the stub server's wire formats.
"""

from __future__ import annotations

from ._exchange import DIVERGENCE_STATUS
from ._server import BASE_URL_VARIABLES, Proxy
from ._upstream import UpstreamConfigError

__all__ = ["BASE_URL_VARIABLES", "DIVERGENCE_STATUS", "Proxy", "UpstreamConfigError"]
