"""The transports a `Client` talks over: direct (in process), stdio (a subprocess) and Streamable
HTTP. Each implements `Transport`; none knows anything of tasks.

**Streamable HTTP, module by module.** `transports.http` is its semantics (the paths a message
takes, sessions, what to do with each answer); `_headers` builds a message's headers; `_sender`
takes a request to the server (straight to a kept connection, or through `Session.request`);
`_answers` reads what an answer says (a JSON body, SSE messages, a listen stream); `_body` reads a
body under the deadline; `_failures` classifies failures for the retry policy; `_watchdog` keeps
the deadline; `_in_flight` holds what `close` cuts; `_plumbing` holds every use of a private name
of requests, urllib3 or http.client; `_session` is the 2025-era session, `_get_stream` its GET
stream.
"""

from mcp_tasks.transports._base import Stream, Transport

__all__ = ["Stream", "Transport"]
