"""Interpreter start-up hooks.

``sitecustomize`` is what ``rewind record|replay -- CMD`` puts on the child's path;
``startup`` is what the installed ``zz_agent_rewind_otel.pth`` runs when ``REWIND_RECORD``
or ``REWIND_REPLAY`` is set in any Python of the environment.

Beside the report at the top: may import setup and everything below it.
"""

#: The variable ``rewind record|replay`` passes the instrumented SDKs' module names in
#: (``sitecustomize`` reads it under the same name without importing this package).
SDK_MODULES_VARIABLE = "REWIND_SDK_MODULES"
