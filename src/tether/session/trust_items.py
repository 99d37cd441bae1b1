"""What a grant of a project's servers or extensions covers: each item as the user was shown it.

A grant of ``mcp`` or ``extensions`` (``tether.session.trust``) is a yes to the servers and
extension files the trust question named, not to whatever the folder holds on a later start: a
``git pull``, a branch switch or a checked-out pull request can add a server or rewrite an
extension, and that is code the user never saw. So each item is named here the same way for the
question, the record of the answer and the check at start-up: a server by its definition as the
question shows it (``_server_line``: command line or URL, with what it is given, ``${VAR}`` as
written) and an extension by its path and the SHA-256 of its content (a package: of every file
in it). An item whose name changed is a new one, asked about (interactive) or left out with a
note saying how to trust it (every other mode).
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.mcp.config import McpServerConfig


def server_items(
    path: Path, content: bytes | None = None, problems: list[str] | None = None
) -> dict[str, str]:
    """The enabled servers of the project ``.mcp.json`` at ``path`` (its ``content`` as read
    already, if given), name to the line the trust question shows. A bad entry is left out, the
    others kept (one bad entry took every server out of the question and of the grant); it and
    a file that is not JSON add a line to ``problems``, if given."""
    from tether.mcp.config import AsWritten, read_mcp_file
    from tether.mcp.errors import McpConfigError

    problems = [] if problems is None else problems
    try:
        servers = read_mcp_file(path, "project", AsWritten(), problems, content=content)
    except McpConfigError as exc:
        problems.append(f"{exc} (its servers are skipped)")
        return {}
    return {s.name: _server_line(s) for s in servers if s.enabled}


def extension_items(folder: Path) -> dict[Path, str]:
    """The extension files of ``folder`` (a project's ``.tether/extensions``), each to its
    ``path sha256:HEX``; one that cannot be read whole is left out (it never matches a grant)."""
    return {path: item for path, (item, _) in extension_contents(folder).items()}


def extension_contents(
    folder: Path, refused: dict[Path, str] | None = None
) -> dict[Path, tuple[str, dict[str, bytes]]]:
    """``extension_items`` with the bytes hashed for each (a package: each of its files', by
    path): what the loader runs when the item is granted, so that a file rewritten between the
    hash and the import runs as it was hashed, not as it became. One left out is put in
    ``refused``, if given, with why: no grant can cover it, and "changed since" would mislead."""
    from tether.own_files import RefusedFile
    from tether.session.extensions.loader import extension_files

    found: dict[Path, tuple[str, dict[str, bytes]]] = {}
    for path in extension_files(folder):
        try:
            digest, files = _read(path)
        except (OSError, RefusedFile) as exc:
            if refused is not None:
                refused[path] = str(exc)
            continue
        found[path] = (f"{path} sha256:{digest}", files)
    return found


def _read(path: Path) -> tuple[str, dict[str, bytes]]:
    """The SHA-256 of a file's bytes, or of a package's files (each relative path and content,
    ``__pycache__`` aside): any of them is code the import runs; with the bytes it was made of.
    Read under ``tether.own_files``' policy: a FIFO there blocks nothing and is never granted
    (a link is followed, as the import follows it: its target's content is what runs; in a
    package, only one to a file of the package: ``_package_files``). Raises ``OSError`` or
    ``RefusedFile``."""
    from tether.own_files import read_own_file

    package = None if path.is_file() else Path(os.path.realpath(path))
    files = [path] if package is None else sorted(_package_files(path, package))
    total = hashlib.sha256()
    contents: dict[str, bytes] = {}
    for file in files:
        total.update(f"{file.relative_to(path) if file != path else ''}\0".encode("utf-8", "surrogateescape"))
        contents[str(file)] = read_own_file(file, None if package is None else [package])
        total.update(hashlib.sha256(contents[str(file)]).digest())
    return total.hexdigest(), contents


def _package_files(package: Path, real: Path) -> Iterator[Path]:
    """The files of ``package`` (its real path ``real``), ``__pycache__`` aside. A package
    holding a link to a folder, or to a file outside it, raises ``RefusedFile``: the import
    goes through such a link, and the walk did not (``lib -> ../shared`` was neither hashed nor
    served from the hashed bytes, so a change there ran under the grant); followed, a grant of
    the package would cover what it does not hold (``lib -> /``: the whole disk read at each
    start). A link to a file of the package is read as that file."""
    from tether.own_files import RefusedFile

    folders = [package]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                where, target = Path(entry.path), Path(os.path.realpath(entry.path))
                if entry.is_symlink() and (entry.is_dir() or not target.is_relative_to(real)):
                    raise RefusedFile(
                        f"{where.relative_to(package)} links to {target}: a package holding a link to a "
                        "folder, or to a file outside it, is not granted (only its own files are hashed)"
                    )
                if not entry.is_dir():
                    yield where
                elif entry.name != "__pycache__":
                    folders.append(where)


def _server_line(server: McpServerConfig) -> str:
    """``name: VAR=value command args (in cwd)``, or ``name: url (type: sse) (headers: ...)
    (oauth: ...)``: everything that decides what runs, where it connects and what it is given
    counts as much as its command (``NODE_OPTIONS=--require ./x.js`` runs the project's code in
    any node server; a header can carry ``${ANTHROPIC_API_KEY}`` to the url, and so can an OAuth
    ``clientSecret``, sent to the token endpoint the server names; the SSE transport posts to
    an address the server names; OAuth turned on sends a sign-in's token with every request).
    Knobs that change none of that (timeouts, ``enabledTools``, ``maxTools``, the OAuth
    ``callbackPort`` tether listens on) are left out: changing them is no new decision. A
    marker is written only for a value other than the default, so that a grant of a server
    using the defaults reads as it did before the marker existed."""
    if server.command is None:
        from dataclasses import replace

        from tether.mcp.config import OAuthSettings

        headers = ", ".join(f"{k}: {v}" for k, v in server.headers.items())
        oauth = server.oauth
        given = [("clientId", oauth.client_id), ("clientSecret", oauth.client_secret), ("scope", oauth.scope)]
        signs_in = ", ".join(f"{key} {value}" for key, value in given if value is not None)
        if not oauth.enabled and replace(server, oauth=OAuthSettings()).uses_oauth:
            signs_in = "off"  # a grant of it says so: turned on, a token goes with each request
        return (
            f"{server.name}: {server.url}"
            + (" (type: sse)" if server.sse else "")
            + (f" (headers: {headers})" if headers else "")
            + (f" (oauth: {signs_in})" if signs_in and (server.uses_oauth or signs_in == "off") else "")
        )
    env = [f"{name}={shlex.quote(value)}" for name, value in server.env.items()]
    where = f" (in {server.cwd})" if server.cwd is not None else ""
    return f"{server.name}: {' '.join([*env, shlex.join([server.command, *server.args])])}{where}"
