"""Holds the ``sitecustomize`` that ``rewind record|replay -- CMD`` puts on the child's path."""
