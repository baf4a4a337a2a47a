"""Hostile inputs and the bounded runners that feed them to rewind.

Reusable by any suite (the chaos suite calls them too): each generator builds one file
or server that once made rewind hang, exhaust memory, crash or go live; each runner
runs rewind on it in a subprocess bounded in time and address space.
"""
