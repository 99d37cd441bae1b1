"""OAuth for HTTP MCP servers, with the SDK's client (``mcp.client.auth.OAuthClientProvider``).

A server that answers 401 is signed in to the way the MCP authorization spec says, all of it
the SDK's: protected-resource and authorization-server metadata, dynamic client registration
(or the ``clientId`` the config gives), PKCE, the token exchange and refreshes. What tether adds
is where the user signs in and where the results are kept:

- the sign-in page is opened with Python's ``webbrowser`` (``$BROWSER`` chooses the program) and
  its address said as a notice, so a user of RPC, ACP or a headless box can open it by hand; the
  answer comes back to a listener on ``127.0.0.1`` (``/callback``) that takes one request. The
  wait is bounded (``SIGN_IN_TIMEOUT``): a sign-in nobody finishes fails the server's start;
- the tokens and the registered client are kept in ``mcp-oauth/<server>.json`` under tether's
  data folder, created ``0600`` in a ``0700`` folder; they are never logged, never put in a
  notice or a model's context, and never passed to a tool process. The callback port is kept
  with them: a registered client's redirect address must stay the same.

OAuth applies to an HTTP server whose config has no ``Authorization`` header (pi's rule), unless
``"oauth": false``; ``"oauth": {"clientId", "clientSecret", "callbackPort", "scope"}`` sets a
registered client instead of dynamic registration.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, urlsplit

from tether.own_files import write_own_file

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

    from tether.mcp.config import McpServerConfig

SIGN_IN_TIMEOUT = 300.0
"""Seconds to finish signing in once the page was offered."""
FOLDER = "mcp-oauth"


class TokenFile:
    """The SDK's ``TokenStorage`` as one private file per server (tokens, client, callback port)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data: Any = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # RecursionError: nested too deeply
            return {}
        return cast(dict[str, Any], data) if isinstance(data, dict) else {}

    def _write(self, key: str, value: Any) -> None:
        data = self._read()
        data[key] = value
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # a new 0600 temporary file of its own: two tethers signing in at once each write theirs
        write_own_file(self.path, [json.dumps(data).encode()])

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        found = self._read().get("tokens")
        return OAuthToken.model_validate(found) if isinstance(found, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        found = self._read().get("client")
        return OAuthClientInformationFull.model_validate(found) if isinstance(found, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))

    def seed_client(self, client_info: OAuthClientInformationFull) -> None:
        """The client the config names, unless the same one is kept already."""
        kept = self._read().get("client")
        if not isinstance(kept, dict) or cast(dict[str, Any], kept).get("client_id") != client_info.client_id:
            self._write("client", client_info.model_dump(mode="json", exclude_none=True))

    def callback_port(self, wanted: int | None) -> int:
        """The port of the redirect address: the config's, else the one kept, else a free one
        (kept from now on)."""
        if wanted is not None:
            return wanted
        kept = self._read().get("callbackPort")
        if isinstance(kept, int):
            return kept
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        self._write("callbackPort", port)
        return port


def token_file(data_dir: Path, name: str) -> Path:
    """Where server ``name``'s sign-in is kept."""
    from tether.mcp.config import slug_of

    return data_dir / FOLDER / f"{slug_of(name)}.json"


def sign_out(data_dir: Path, name: str) -> Path | None:
    """Forget server ``name``'s sign-in (``tether mcp logout``): its tokens, the client registered
    for it and the callback port, as pi's sign-out does, so the next start signs in and registers
    afresh. The file removed, or ``None`` when there was none. A session already connected keeps
    the tokens it holds until it ends."""
    path = token_file(data_dir, name)
    try:
        path.unlink()
    except FileNotFoundError:
        return None
    return path


def oauth_for(config: McpServerConfig, data_dir: Path, on_sign_in: Callable[[str], None]) -> httpx2.Auth:
    """The SDK's OAuth client for ``config``'s server. ``on_sign_in(url)`` is told the sign-in
    address when the server asks for one (the connection says it to the user and gives the sign-in
    ``SIGN_IN_TIMEOUT``)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    settings = config.oauth
    storage = TokenFile(token_file(data_dir, config.name))
    port = storage.callback_port(settings.callback_port)
    redirect = f"http://127.0.0.1:{port}/callback"
    metadata = OAuthClientMetadata.model_validate(
        {
            "client_name": "tether",
            "redirect_uris": [redirect],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_post" if settings.client_secret else "none",
            "scope": settings.scope,
        }
    )
    if settings.client_id is not None:  # a registered client: no dynamic registration
        given = {**metadata.model_dump(mode="json", exclude_none=True), "client_id": settings.client_id}
        if settings.client_secret:
            given["client_secret"] = settings.client_secret
        storage.seed_client(OAuthClientInformationFull.model_validate(given))
    callback = _Callback(port)

    async def redirect_handler(url: str) -> None:
        await callback.listen()
        on_sign_in(url)
        await asyncio.to_thread(_open_browser, url)

    return OAuthClientProvider(
        server_url=config.url or "",
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback.wait,
    )


def _open_browser(url: str) -> None:
    """Open the sign-in page if this machine has a browser (``$BROWSER`` names one); the notice
    has the address either way."""
    import webbrowser

    with contextlib.suppress(Exception):
        webbrowser.open(url)


class _Callback:
    """The one-request listener the authorization server redirects the browser to."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._server: asyncio.Server | None = None
        self._answer: asyncio.Future[dict[str, str]] | None = None

    async def listen(self) -> None:
        self._answer = asyncio.get_running_loop().create_future()
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def wait(self) -> AuthorizationCodeResult:
        from mcp.client.auth.exceptions import OAuthFlowError
        from mcp.shared.auth import AuthorizationCodeResult

        assert self._answer is not None
        try:
            params = await asyncio.wait_for(self._answer, SIGN_IN_TIMEOUT)
        except TimeoutError:
            raise OAuthFlowError(f"nobody signed in within {SIGN_IN_TIMEOUT:g} s") from None
        finally:
            if self._server is not None:
                self._server.close()
                self._server = None
        if "code" not in params:
            raise OAuthFlowError(
                f"sign-in refused: {params.get('error_description') or params.get('error', 'no code')}"
            )
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            parts = line.decode("latin-1").split(" ")
            target = urlsplit(parts[1]) if len(parts) > 2 else None
            if target is None or target.path != "/callback":
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            params = {k: v[0] for k, v in parse_qs(target.query).items()}
            body = b"Signed in; you can close this page and go back to tether.\n"
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            if self._answer is not None and not self._answer.done():
                self._answer.set_result(params)
        except (TimeoutError, OSError, UnicodeError):
            pass
        finally:
            with contextlib.suppress(Exception):
                await writer.drain()
                writer.close()
