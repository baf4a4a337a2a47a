"""OpenTelemetry instrumentors, one module per provider SDK."""
