"""Riding out a database server that is briefly away (a restart, a failover).

``Patience.run`` tries a call again, with backoff, while it fails because the server cannot be
reached, for up to a bounded time: long enough for a restart, never forever (a dead server ends
the caller's work with an error in bounded time). It logs one warning when the database goes away
and one line when it is back, however many calls of however many threads noticed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

log = logging.getLogger("tether.store")

RETRY_DELAY = 0.05
"""The first pause before trying again; it doubles up to ``MAX_RETRY_DELAY``."""
MAX_RETRY_DELAY = 2.0


class Patience:
    """One database's outage state (see the module docstring).

    Args:
        where: The database as messages name it (no password).
        seconds: How long a call keeps trying while the database is unreachable.
        describe: The one-line text of an error, for the warning.
    """

    def __init__(self, where: str, seconds: float, describe: Callable[[BaseException], str]) -> None:
        self.where = where
        self.seconds = seconds
        self._describe = describe
        self._away_since: float | None = None
        """When the database became unreachable (monotonic), while it is."""
        self._mutex = threading.Lock()

    def run(self, attempt: Callable[[], T], unreachable: Callable[[BaseException], bool]) -> T:
        """``attempt()``, again while it fails with errors ``unreachable`` says are the server's
        absence, for up to ``seconds``; the last such error is raised after that."""
        delay = RETRY_DELAY
        deadline: float | None = None
        while True:
            try:
                result = attempt()
            except Exception as err:
                if not unreachable(err):
                    raise
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self.seconds
                    self._went_away(err)
                if now >= deadline:
                    raise
                time.sleep(min(delay, deadline - now))
                delay = min(delay * 2, MAX_RETRY_DELAY)
                continue
            if self._away_since is not None:  # back, whichever call noticed it first
                self._came_back()
            return result

    def _went_away(self, err: BaseException) -> None:
        with self._mutex:
            if self._away_since is not None:
                return
            self._away_since = time.monotonic()
        log.warning(
            "session database %s unreachable (%s): retrying for up to %.0f s",
            self.where,
            self._describe(err),
            self.seconds,
        )

    def _came_back(self) -> None:
        with self._mutex:
            since, self._away_since = self._away_since, None
        if since is not None:
            log.warning(
                "session database %s reachable again after %.1f s", self.where, time.monotonic() - since
            )
