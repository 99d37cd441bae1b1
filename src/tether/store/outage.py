"""Riding out a database server that is briefly away (a restart, a failover).

``Patience.run`` tries a call again, with backoff, while it fails because the server cannot be
reached, for up to a bounded time: long enough for a restart, never forever (a dead server ends
the caller's work with an error in bounded time). It logs one warning when the database goes away
and one line when it is back, however many calls of however many threads noticed. Just after it
is back, failures are quiet unless they last ``QUIET_AFTER_BACK``: after a restart, each connection
a pool kept from before it fails once when next used, and the first of them used after the
"back" line would otherwise log a second outage.
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
QUIET_AFTER_BACK = 5.0
"""Seconds after the database came back during which a failure is logged only once it lasts."""


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
        self._said = False
        """Whether this outage was logged."""
        self._back_at = float("-inf")
        """When the last outage ended (monotonic)."""
        self._mutex = threading.Lock()

    def run(self, attempt: Callable[[], T], unreachable: Callable[[BaseException], bool]) -> T:
        """``attempt()``, again while it fails with errors ``unreachable`` says are the server's
        absence, for up to ``seconds``; the last such error is raised after that."""
        delay = RETRY_DELAY
        deadline: float | None = None
        first = 0.0
        while True:
            try:
                result = attempt()
            except Exception as err:
                if not unreachable(err):
                    raise
                now = time.monotonic()
                if deadline is None:
                    deadline, first = now + self.seconds, now
                self._went_away(err, now - first)
                if now >= deadline:
                    raise
                time.sleep(min(delay, deadline - now))
                delay = min(delay * 2, MAX_RETRY_DELAY)
                continue
            if self._away_since is not None:  # back, whichever call noticed it first
                self._came_back()
            return result

    def _went_away(self, err: BaseException, lasted: float) -> None:
        now = time.monotonic()
        with self._mutex:
            if self._away_since is None:
                self._away_since = now
            if self._said or (now - self._back_at < QUIET_AFTER_BACK and lasted < QUIET_AFTER_BACK):
                return
            self._said = True
        log.warning(
            "session database %s unreachable (%s): retrying for up to %.0f s",
            self.where,
            self._describe(err),
            self.seconds,
        )

    def _came_back(self) -> None:
        with self._mutex:
            since, said = self._away_since, self._said
            self._away_since, self._said = None, False
            if since is not None:
                self._back_at = time.monotonic()
        if since is not None and said:
            log.warning(
                "session database %s reachable again after %.1f s", self.where, time.monotonic() - since
            )
