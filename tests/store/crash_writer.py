"""Child side of the crash test: append entries to a session until killed.

Each committed append is reported on a pipe as one small message (``E<session id><entry id>``,
one ``write`` below ``PIPE_BUF``, so it is either wholly there or absent); a created session as
``S<session id>``. Anything reported was committed before the report was written.

A new session is created either at once or deferred (stored with its first append, whose
transaction inserts its row: ``SessionStore.acquire_new_writer``, as every front end creates
one), and reported once it is stored; appends are committed either before they return or by the
store's writer thread (``defer_writes``, then ``flush_writes`` waits), so kills land in every
path a session is written by.
"""

from __future__ import annotations

import random
from multiprocessing.connection import Connection

from session_helpers import open_when_free
from tether.session import SessionManager
from tether.wire import decode_message

# Build the message validator here, in the forkserver that preloads this module, instead of
# once per forked child.
decode_message({"role": "user", "content": "warm-up", "timestamp": 0})


def write_until_killed(location: str, session_id: str | None, seed: int, report: Connection) -> None:
    rng = random.Random(seed)
    manager = SessionManager.at(location)
    unreported = False  # a deferred session: reported with its first commit
    if session_id is None:
        session = manager.create("/crash", deferred=rng.random() < 0.5)
        unreported = not session.stored
        if session.stored:
            report.send_bytes(f"S{session.id}".encode())
    else:
        session = open_when_free(manager, session_id)  # its killed writer's lock may linger a moment
    by_writer = rng.random() < 0.5
    while True:
        size = rng.choice([50, 2_000, 30_000, 150_000])
        body = "".join(rng.choice("abcdefghij \n") for _ in range(64)) * (size // 64)
        if by_writer:
            session.defer_writes()
        if rng.random() < 0.5:
            entry_id = session.append_message({"role": "user", "content": body, "timestamp": 1})
        else:
            entry_id = session.append_messages(
                [
                    {"role": "user", "content": body[:100], "timestamp": 1},
                    {"role": "user", "content": body, "timestamp": 2},
                ]
            )[-1]
        session.flush_writes()  # committed: by the writer thread when deferred
        if unreported:
            report.send_bytes(f"S{session.id}".encode())
            unreported = False
        report.send_bytes(f"E{session.id}{entry_id}".encode())


def append_n(location: str, session_id: str, count: int) -> None:
    """Append ``count`` messages to one session and exit (concurrent-writers test)."""
    with SessionManager.at(location) as manager, manager.open(session_id) as session:
        for i in range(count):
            session.append_message({"role": "user", "content": f"{session_id} {i}", "timestamp": i})
