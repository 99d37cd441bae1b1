"""``tether serve``: the HTTP API and web page (``tether.serve``, docs/serve.md) on uvicorn.

The edge of the server: settings, the token rule and the listening socket are decided here; the
routes know nothing of them. Starlette and uvicorn are imported only when the command runs.
"""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tether.cli.collector import start_up_done
from tether.errors import UserError

if TYPE_CHECKING:
    from tether.durable.config import DurableConfig

MISSING = "tether serve needs the serve extra: pip install 'tether[serve]'"


class ServeError(UserError):
    """A mistake in a ``tether serve`` invocation; the message says what."""


def is_loopback(host: str) -> bool:
    """Only loopback addresses may be served without a token (``localhost`` is a name: a
    resolver could send it elsewhere, so it counts as not loopback)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_server(
    *,
    host: str,
    port: int,
    token: str | None,
    read_only_token: str | None,
    cors_origins: tuple[str, ...],
    model: str | None,
    prompt_rate: int,
    yes: bool,
) -> int:
    try:
        import uvicorn

        from tether.serve import ServeConfig, create_app
        from tether.serve.slow_clients import HeaderDeadline
    except ImportError:
        sys.stderr.write(f"tether: {MISSING}\n")
        return 1
    from tether.ai.paths import config_dir
    from tether.serve.auth import Tokens
    from tether.serve.hub import SessionHub
    from tether.session.options import SessionOptions
    from tether.session.settings import load_settings
    from tether.store import open_store

    cwd = Path.cwd()
    settings = load_settings(config_dir(), cwd)  # a SettingsError is a UserError: one line
    token = token or settings.serve_token
    if read_only_token is not None and read_only_token == token:
        raise ServeError("--read-only-token must differ from the full token")
    sock = _listen(host, port)  # first: no token is shown for a server that cannot start
    # "--cors-origin '*'" lets every site's pages call the server, and "null" every page in a
    # sandboxed frame, which any site can make: only a token keeps them out
    anyones = "*" in cors_origins or "null" in cors_origins
    if token is None and (read_only_token is not None or not is_loopback(host) or anyones):
        token = secrets.token_urlsafe(32)
        sys.stderr.write(f"tether serve: token (shown once): {token}\n")
    durable = _durable()
    store = open_store()
    try:
        options = SessionOptions(model=model, approval="yes" if yes else None)
        config = ServeConfig(
            store=store,
            hub=SessionHub(options, lambda folder: load_settings(config_dir(), folder), cwd),
            tokens=Tokens(token, read_only_token),
            prompts_per_minute=prompt_rate,
            cors_origins=cors_origins,
            model=model,
            durable=durable,
        )
        server = uvicorn.Server(
            uvicorn.Config(
                create_app(config),
                http=HeaderDeadline,
                log_level="warning",
                timeout_graceful_shutdown=3,
                lifespan="on",
            )
        )
        bound_host, bound_port = sock.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        start_up_done(many_sessions=True)
        asyncio.run(_serve(server, sock, f"http://{shown}:{bound_port}/"))
    finally:
        store.close()
    return 0


async def _serve(server: object, sock: socket.socket, url: str) -> None:
    import uvicorn

    assert isinstance(server, uvicorn.Server)

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.02)
        sys.stderr.write(f"tether serve: listening on {url}\n")
        sys.stderr.flush()

    task = asyncio.get_running_loop().create_task(announce())
    try:
        await server.serve(sockets=[sock])
    finally:
        task.cancel()


def _durable() -> DurableConfig | None:
    """Where ``/api/runs`` finds the runs; ``None`` (said once on stderr) when it cannot."""
    from tether.cli.durable_cmd import DurableCommandError, durable_config

    try:
        return durable_config(None)
    except DurableCommandError as exc:
        sys.stderr.write(f"tether serve: no /api/runs: {exc}\n")
        return None


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock
