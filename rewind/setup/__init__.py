"""Getting rewind into a program: the patching API (``patch_openai()``, ``auto_patch()``),
zero-code sessions from ``REWIND_*`` variables and which process owns them.

The start-up hook that runs these before a program does is ``rewind._autostart``.
May import the engine and what lies below it, and what-if for environment forks.
"""
