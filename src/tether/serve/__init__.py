"""``tether serve``: an HTTP API, live session streams over SSE and a web page (docs/serve.md).

A front end like ``rpc`` and ``acp``: it reads sessions from the store and drives the sessions it
opens through the same ``AgentSession`` core, built by the same factory. Nothing imports it but
``tether.cli``. Starlette and uvicorn come with the ``serve`` extra.
"""

from tether.serve.app import ServeConfig as ServeConfig, create_app as create_app
