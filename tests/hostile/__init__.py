"""Hostile inputs and the bounded runners that feed them to rewind.

Reusable by any suite (the chaos suite calls them too): each generator builds one file,
server or program that once made rewind hang, exhaust memory, crash or go live.

- ``bounded``: ``run_bounded``/``rewind_cli``, a subprocess limited in time and address
  space (RLIMIT_AS); ``address_space_limit`` and ``rewind_command`` for a runner of one's
  own (the chaos suite's, which also measures peak memory);
- ``telemetry``: telemetry files for ``rewind import`` (decoding bombs, a parent chain
  tens of thousands deep, joined runs, numbers past every range);
- ``servers``: ``HostileServer``, a Phoenix-like HTTP server on loopback that pages
  forever, trickles, redirects off the host or crowds one page;
- ``guard``: probes of the network guard (UDP, the C socket type, the resolver, child
  processes, curl), each run in a network namespace of its own (``netns``); ``run_probe``
  also runs a probe body of another suite's (the chaos suite's known holes);
- ``agents``: programs that misbehave under ``rewind mutate`` (a raw-HTTP fallback,
  hundreds of megabytes of output);
- ``streams``: damage to recorded streams (keys renamed, indexes moved), as bit flips do.
"""
