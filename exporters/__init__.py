"""Span exporters: the one that writes rewind trace files (installed as ``rewind.exporters``).

Below the engine, which installs them: may import storage and data only.
"""

from .rewind_file import RewindSpanExporter

__all__ = ["RewindSpanExporter"]
