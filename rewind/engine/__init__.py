"""The recording and replay engine: the one path every call takes.

``context`` (the active session, a leaf) ← ``core`` (a ``Call``: canonical request,
fingerprint, span) ← ``telemetry`` (rewind's tracer provider and span processors) ←
``replay`` (serving recorded events) ← ``session`` (``record`` / ``replay``), plus what a
session switches on: decorators, thread-pool propagation, breakpoints, the network guard,
placeholder keys, content capture. May import matching, storage and data; never the tools
above it (what-if, inspection, the CLI).
"""
