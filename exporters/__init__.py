"""Span exporters: the one that writes rewind trace files."""

from .rewind_file import RewindSpanExporter

__all__ = ["RewindSpanExporter"]
