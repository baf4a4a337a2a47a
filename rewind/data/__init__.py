"""Values and text every layer shares: canonical JSON and fingerprints, errors as records,
bounded reads of untrusted bytes, text made inert for humans, the GenAI attribute names.

The bottom layer: it imports nothing of rewind but ``rewind.errors`` and ``rewind._version``.
"""
