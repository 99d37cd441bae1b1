from __future__ import annotations

import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tools_support import answer_hello

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
