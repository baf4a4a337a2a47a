"""The version of agent-rewind-otel: a leaf, so anything may read it without importing the package."""

__version__ = "0.1.0"
