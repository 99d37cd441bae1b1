"""Child-process sides of the multi-process session tests (run from a forkserver, see
test_session_crash.py): each opens its own store, with its own connections."""

from __future__ import annotations

import os
import time
from multiprocessing.synchronize import Barrier

from tether.session import SessionManager
from tether.store import PostgresStore, SessionLockedError


def open_store_at_once(url: str, start: Barrier) -> None:
    """Open (and so migrate) the store the moment every sibling is ready too."""
    start.wait()
    PostgresStore(url).close()


def contend(location: str, session_id: str, rounds: int, batch: int) -> None:
    """``rounds`` times: take the session's writer lock (retrying while the other process holds
    it), append ``batch`` messages in separate transactions, let go."""
    with SessionManager.at(location) as manager:
        for r in range(rounds):
            while True:
                try:
                    session = manager.open(session_id)
                    break
                except SessionLockedError:
                    time.sleep(0.001)
            with session:
                for i in range(batch):
                    session.append_message(
                        {"role": "user", "content": f"{os.getpid()} {r} {i}", "timestamp": i}
                    )
