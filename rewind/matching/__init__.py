"""Which recorded step answers an incoming call, and when none does, why.

``incoming`` is the call as matchers see it; ``strategies`` holds the matchers (strict,
ordered, parallel, fuzzy); ``registry`` resolves ``match="…"`` names to them;
``divergence`` explains a miss; ``similarity`` scores how alike two requests are.
May import ``rewind.storage`` and ``rewind.data``; never the engine.
"""

from .incoming import IncomingCall
from .registry import register_matcher, resolve_matcher
from .strategies import FuzzyMatcher, Matcher, OrderedMatcher, ParallelMatcher, StrictMatcher, next_if_same

__all__ = [
    "FuzzyMatcher",
    "IncomingCall",
    "Matcher",
    "OrderedMatcher",
    "ParallelMatcher",
    "StrictMatcher",
    "next_if_same",
    "register_matcher",
    "resolve_matcher",
]
