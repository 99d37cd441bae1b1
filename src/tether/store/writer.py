"""Appends committed by a thread, many sessions' at once: session writes off the event loop.

A service running 1,000 agents in one event loop would otherwise commit every entry on the
loop's thread, one transaction each. ``BatchWriter`` takes appends from any thread, in order,
and one thread of its own commits whatever has queued up since its last commit in a single
transaction (``commit_batch``): entries keep their order (one queue, one committing thread), and
the cost of a commit is shared by the sessions that wrote meanwhile.

Each append is an ``Append`` (a tuple, made in C); ``submit`` returns the ``Commit`` its batch
shares, done once their transaction ended. If the batch's transaction fails, each of its appends
is retried in a transaction of its own (``commit_one``), so one bad append (a session deleted
meanwhile, a lost lease) fails only itself: the commit's ``failure(lease)`` says why. After a
failure, a session's later appends fail without being tried: they would hang off an entry that
is not there (their batches' commits say the same failure). A thread stopped by a
``BaseException`` (a bug's) fails every append it had and refuses later ones (``_stop``).

One ``Commit`` per batch, and nothing else per append: with 1,000 sessions thousands of appends
wait at once, and a future is a condition, a lock and their bound methods (~10 objects for the
garbage collector, surviving long enough to reach its oldest generation); an object per append
that only carried its outcome cost each stored message ~2.5k instructions to make. Nor a
``concurrent.futures.Future`` per batch, awaited through ``asyncio.wrap_future``: each waiting
session then chained a future of its own to it, and the writer woke the event loop once per
waiting session (``call_soon_threadsafe``: a callback and a write to the loop's wake-up pipe,
on the writer's thread), where a ``Commit`` wakes each loop once per batch, for all its waiters.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

from tether.store.entries import EntryDict
from tether.store.errors import SessionError
from tether.store.lease import WriterLease

BATCH_WINDOW = 0.015
"""Seconds the thread waits after an append arrives before it commits what has queued up: one
transaction, and one handover of the interpreter lock, for every append of those 15 ms instead
of one per append (which cost more CPU than the commits themselves). A batch's cost is mostly
its own (the commit's page writes, the statements, handing the interpreter lock back and forth
with a busy event loop), not its appends': at 1,000 sessions in flight (P6, a real model server)
5 ms made ~1,600 batches of ~9 appends, 15 ms ~860 of ~16, and the writer thread's CPU fell
(medians of 3 interleaved runs each, 14,000 appends: 1.23 -> 0.80 s; 0.96 -> 0.84 s in another
3 at a load average of 12-18). A run's pass waits for its batch at its end, so this is also how
much later a busy service reports ``agent_end``. It waits only while sessions share the writer (its last batch held appends of
more than one): a session writing alone, as a ``tether -p`` run does, has nothing to share a
commit with, and would wait the window at the end of every run for its last entries."""


class Commit:
    """The end of one batch's transaction, which each of its appends' sessions may wait for:
    blocking (``wait``) or on an event loop (``settled``); see the module docstring."""

    __slots__ = ("_done", "_failures", "_lock", "_waiters", "finished")

    def __init__(self) -> None:
        self._done: threading.Event | None = None
        """Made by the first blocking ``wait``: a batch is nearly always waited for on an event
        loop (``settled``), and an ``Event`` is a condition and a lock made in Python, each batch."""
        self._lock = threading.Lock()
        self._waiters: list[asyncio.Future[None]] = []
        self._failures: dict[int, tuple[WriterLease, BaseException]] | None = None
        """``id(lease)`` → the lease and why its appends in this batch were not written."""
        self.finished = False
        """Whether the batch's transaction has ended: an attribute, not a method, for a
        session's check before each append."""

    def failure(self, lease: WriterLease) -> BaseException | None:
        """Why the appends under ``lease`` in this batch were not written (or their session's
        earlier append, which they would hang off); ``None`` when they were. Read once done."""
        failed = None if self._failures is None else self._failures.get(id(lease))
        return failed[1] if failed is not None and failed[0] is lease else None

    def fail(self, lease: WriterLease, failure: BaseException) -> None:
        """The writer's thread, before ``finish``: ``lease``'s appends in this batch failed (the
        first failure said stays)."""
        if self._failures is None:
            self._failures = {}
        self._failures.setdefault(id(lease), (lease, failure))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the transaction ended (or ``timeout`` passed: then ``False``)."""
        with self._lock:
            if self.finished:
                return True
            if self._done is None:
                self._done = threading.Event()
            done = self._done
        return done.wait(timeout)

    async def settled(self) -> None:
        """Wait on the running loop until the transaction ended. A waiter cancelled meanwhile
        only stops waiting: the batch is other sessions' too."""
        if self.finished:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            if self.finished:
                return
            self._waiters.append(waiter)
        await waiter

    def finish(self) -> None:
        """The transaction ended (the writer's thread): wake every waiter, each loop once."""
        with self._lock:
            self.finished = True  # before the event: whoever it wakes finds the batch done
            if self._done is not None:
                self._done.set()
            waiters, self._waiters = self._waiters, []
        loops: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for waiter in waiters:
            loops.setdefault(waiter.get_loop(), []).append(waiter)
        for loop, woken in loops.items():
            with contextlib.suppress(RuntimeError):  # its loop is closed: no one waits there
                loop.call_soon_threadsafe(_wake, woken)


def _wake(waiters: list[asyncio.Future[None]]) -> None:
    for waiter in waiters:
        if not waiter.done():  # not cancelled meanwhile
            waiter.set_result(None)


class Append(NamedTuple):
    """An append on its way to the database (``submit`` makes it with ``tuple.__new__``, in C):
    its batch's ``Commit`` says when and whether it was written."""

    lease: WriterLease
    entries: Sequence[EntryDict]
    leaf_id: str
    updated: int


@dataclass(slots=True)
class SessionAppends:
    """The appends of one session in a batch, as one: their entries in order, the last one's
    leaf, the latest time. A store writes a batch as one of these per session (a run's tool call
    and its result usually reach the same batch)."""

    lease: WriterLease
    entries: list[EntryDict]
    leaf_id: str
    updated: int


def by_session(batch: Sequence[Append]) -> list[SessionAppends]:
    """``batch``'s appends merged per session, in the order each session first appears."""
    merged: dict[str, SessionAppends] = {}
    for append in batch:
        group = merged.get(append.lease.session_id)
        if group is None:
            merged[append.lease.session_id] = SessionAppends(
                append.lease, list(append.entries), append.leaf_id, append.updated
            )
        else:
            group.entries += append.entries
            group.leaf_id = append.leaf_id
            group.updated = max(group.updated, append.updated)
    return list(merged.values())


class BatchWriter:
    """One thread committing queued appends, a batch per transaction (see the module docstring).

    Args:
        commit_batch: Write every append given in one transaction; raise if it failed (nothing
            of it is then written).
        commit_one: Write one append in its own transaction; raise if it failed.
        name: The thread's name (in tracebacks and ``py-spy``).
    """

    def __init__(
        self,
        commit_batch: Callable[[Sequence[Append]], None],
        commit_one: Callable[[Append], None],
        name: str,
    ) -> None:
        self._commit_batch = commit_batch
        self._commit_one = commit_one
        self._name = name
        self._queue: list[Append] = []
        self._next_commit = Commit()
        """The commit of the appends queued now: they go into the next batch together."""
        self._mutex = threading.Lock()
        """Guards the queue, its commit, ``_closing`` and ``_stopped``."""
        self._wake = threading.Condition()
        """Wakes the thread; held to check the queue before waiting, so no notify is missed."""
        self._thread: threading.Thread | None = None
        self._closing = False
        self._stopped: SessionError | None = None
        """Why the thread stopped for good (``_stop``): every later ``submit`` raises its like."""
        self._failed: dict[int, tuple[WriterLease, BaseException]] = {}
        """``id(lease)`` → the lease and the failure its later appends inherit."""

    def submit(self, lease: WriterLease, entries: Sequence[EntryDict], leaf_id: str, updated: int) -> Commit:
        """Queue an append; the ``Commit`` returned is done once its batch's transaction ended.
        The queue has a lock of its own (``_mutex``, no Python frame to take it: every stored
        message comes here); the condition is taken only to wake an idle thread, for the first
        append after a batch."""
        with self._mutex:
            if self._stopped is not None:  # a fresh error each time: one raised again would
                # gather every raiser's frames in its traceback, and keep them alive
                raise SessionError(*self._stopped.args) from self._stopped.__cause__
            if self._closing:
                raise RuntimeError("the session store is closed")
            queue = self._queue
            queue.append(_new_append(Append, (lease, entries, leaf_id, updated)))
            committed = self._next_commit
            first = len(queue) == 1
        if first:
            with self._wake:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()
                self._wake.notify()  # the thread waits for the first; it then takes all there are
        return committed

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        with self._mutex:
            self._closing = True
        with self._wake:
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        in_flight: tuple[list[Append], Commit] | None = None  # the batch being written
        try:
            shared = False  # the last batch held appends of more than one session
            while True:
                with self._wake:
                    while not self._queue and not self._closing:
                        self._wake.wait()
                    if not self._queue:
                        return
                if shared and not self._closing:
                    time.sleep(BATCH_WINDOW)  # let the appends of this moment join the batch
                with self._mutex:
                    batch, self._queue = self._queue, []
                    committed, self._next_commit = self._next_commit, Commit()
                in_flight = batch, committed
                first_lease = batch[0].lease
                shared = any(append.lease is not first_lease for append in batch)
                self._commit(batch, committed)
                in_flight = None
                committed.finish()
                # Not held while waiting for more: a handle dropped unclosed frees its lease (and lock).
                del batch, first_lease, committed
        except BaseException as exc:  # a bug, or one raised into the thread: see ``_stop``
            self._stop(exc, in_flight)
            raise

    def _stop(self, exc: BaseException, in_flight: tuple[list[Append], Commit] | None) -> None:
        """The thread stops on ``exc``: no waiter may take an append for written, nor wait for
        it forever. The batch in flight, the appends queued behind it and any submitted later
        fail with one error naming the thread and ``exc`` (which a thread starting again could
        not undo: it is a bug's, or the interpreter's end)."""
        stopped = SessionError(
            f"{self._name}: the session store's writer thread stopped on {type(exc).__name__}"
            f"{f': {exc}' if str(exc) else ''}; the appends queued to it were not written"
        )
        stopped.__cause__ = exc
        with self._mutex:
            self._stopped = stopped
            behind = self._queue, self._next_commit
            self._queue = []
        for appends, committed in (behind,) if in_flight is None else (in_flight, behind):
            for append in appends:
                committed.fail(append.lease, stopped)
            committed.finish()

    def _commit(self, batch: list[Append], committed: Commit) -> None:
        tried = [a for a in batch if not self._inherit_failure(a.lease, committed)] if self._failed else batch
        if not tried:
            return
        try:
            self._commit_batch(tried)
        except Exception:  # which append is to blame? each tries alone
            for append in tried:
                if self._inherit_failure(append.lease, committed):
                    continue
                try:
                    self._commit_one(append)
                except Exception as exc:  # for its waiter to raise
                    self._failed[id(append.lease)] = (append.lease, exc)
                    committed.fail(append.lease, exc)

    def _inherit_failure(self, lease: WriterLease, committed: Commit) -> bool:
        failed = self._failed.get(id(lease))
        if failed is None or failed[0] is not lease:
            return False
        committed.fail(lease, failed[1])
        return True


_new_append = cast(
    Callable[[type[Append], tuple[WriterLease, Sequence[EntryDict], str, int]], Append],
    tuple.__new__,  # pyright: ignore[reportUnknownMemberType]
)
"""``Append``'s constructor without its Python-level ``__new__`` (a frame per stored message)."""
