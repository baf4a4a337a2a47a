"""Read-only views of finished traces: diff, token and cost accounting, step previews,
the end-of-run summaries and the line stepper. The CLI, TUI and HTML report render these;
none of them computes the same thing again.

May import matching, storage and data; never the engine.
"""
