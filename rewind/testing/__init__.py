"""Test tooling: the pytest plugin (golden traces in one marker) and test doubles.

The top of the stack beside the CLI: may import anything below it.
"""
