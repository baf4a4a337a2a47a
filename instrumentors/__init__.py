"""OpenTelemetry instrumentors, one module per provider SDK (installed as ``rewind.instrumentors``).

A provider module is a table of surfaces over the shared machinery here (``_surface``,
``_kit``, ``_streams``, ``_errors``) plus what is truly its own. Above the engine: may
import ``rewind.engine`` and what lies below it; never inspection, what-if or the tools.
"""
