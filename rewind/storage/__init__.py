"""The trace file and what lies beside it: the JSON-lines format (``Trace``, ``TraceWriter``,
``Event``), its locked and torn-line-safe file, content-addressed blobs, gzip archives and
scratch files that become a trace only when a run succeeds.

May import ``rewind.data`` and the top-level leaves, nothing above.
"""
