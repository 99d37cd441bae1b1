from __future__ import annotations

import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tools_support import Names, answer_hello

from tether.tools import Workspace


@pytest.fixture(autouse=True)
def _no_spool_left(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """``bash``'s spools (``tether.tools.spool``) are made in a temporary folder of the test's own
    and must be gone when it ends: whoever made a ``Workspace`` removes its spools, as a session
    does when it closes. Two tests here deleted their spool file and left its folder, and empty
    ``tether-output-*`` folders piled up in ``/tmp``, two a run."""
    own = tmp_path_factory.mktemp("tmp")
    monkeypatch.setattr(tempfile, "tempdir", str(own))
    yield
    left = sorted(path.name for path in own.glob("tether-output-*"))
    assert not left, f"the test left bash's spools behind: {left} (call workspace.spools.remove())"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The workspace directory (a subfolder, so tests can put files just outside it)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def workspace(root: Path) -> Iterator[Workspace]:
    """A workspace whose spools are removed when the test ends (it made them)."""
    made = Workspace(root)
    yield made
    made.spools.remove()


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on 127.0.0.1 (an SSH server, a database) answering every connection with 'hello'."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()
    thread = threading.Thread(target=answer_hello, args=(server, stop), daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


@pytest.fixture
def names(monkeypatch: pytest.MonkeyPatch) -> Names:
    """A resolver of this process (the sandbox proxy's) for the names put in ``answers``; other
    names go to the system's resolver. No DNS server, no hosts file: the name a wildcard entry
    covers can be made to answer a private address."""
    names = Names()
    system = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in names.answers:
            return system(host, port, *args, **kwargs)
        names.looked_up.append(host)
        queued = names.answers[host]
        addresses = queued.pop(0) if len(queued) > 1 else queued[0]
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, int(port), 0, 0))
            if ":" in a
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, int(port)))
            for a in addresses
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return names
