"""How a step names the decorated function that recorded it, and when two names are one function.

A step records ``module:qualname`` (``agent:Web.run``). The same function is named
differently by different runs of one program: run as a script its module is
``__main__``, imported by a test it is ``agent``; defined inside a test function its
qualname gains ``test_x.<locals>.``. So two names are the same function when their
qualnames agree after the last ``<locals>.``: ``Web.run`` and ``Docs.run`` differ,
``__main__:step`` and ``test_crash:test_x.<locals>.step`` do not.
"""

from __future__ import annotations


def function_name(module: object, qualname: str) -> str:
    """The name a step records for a function: ``module:qualname``."""
    return f"{module}:{qualname}"


def _core(name: str) -> str:
    qualname = name.rpartition(":")[2]
    return qualname.rpartition("<locals>.")[2]


def same_function(a: str, b: str) -> bool:
    """Whether two recorded names can be one function (see the module docstring)."""
    return a == b or _core(a) == _core(b)


__all__ = ["function_name", "same_function"]
