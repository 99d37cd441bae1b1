"""``WriterLease``, the proof of being a session's only writer, in a module of its own: the store
protocol (``store``) hands leases out and the append writer (``writer``) commits under them,
while the store protocol names the writer's ``Commit``; neither may hold it for the other."""

from __future__ import annotations

from typing import Protocol


class WriterLease(Protocol):
    """Proof of being a session's only writer; released on ``release()`` or process exit."""

    @property
    def session_id(self) -> str: ...

    @property
    def active(self) -> bool: ...

    def release(self) -> None: ...
