"""In-memory index of one session's entry tree, with payloads parsed only when read.

Opening a long session reads every row, but the context rebuild only needs the payloads of the
active path after the newest compaction (plus the small settings entries), so a node keeps its
JSON bytes and parses them on first access, with jiter (about 2.5x faster than ``json.loads``
on transcript JSON, which is mostly long escaped strings).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Generator, Iterable, Iterator
from itertools import starmap
from typing import Any, cast

import jiter

from tether.store.entries import EntryDict
from tether.store.store import SessionError, StoredEntry
from tether.wire.json_line import load_line


@contextlib.contextmanager
def paused_gc() -> Generator[None]:
    """Pause the cyclic garbage collector while loading a session.

    Parsing a long session creates hundreds of thousands of acyclic dicts and lists; each batch
    of them would trigger a collection that walks the whole growing heap, which cost about a
    third of the time to open a 10,000-message session. Nothing loaded here forms a cycle.

    On the way out the new objects go straight to the oldest generation (``freeze`` then
    ``unfreeze``, which only moves lists, and resets the young count): otherwise the first
    allocation after the pause runs a young collection that walks every object just loaded,
    about a tenth of the open, only to find what is known here: they are all alive. They are
    still collected, by full collections, like any long-lived data. Skipped when the host has
    frozen objects itself (``unfreeze`` would release them too): asked once (``_host_froze``).
    The asking and the move hold ``_moving``: a session opened by another thread meanwhile
    would otherwise count this one's objects, frozen for the moment, as the host's, and stop
    moving for good.
    """
    global _host_froze
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        with _moving:
            if not _host_froze and gc.get_freeze_count() != 0:
                _host_froze = True
            if not _host_froze:
                gc.freeze()
                gc.unfreeze()
        if enabled:
            gc.enable()


_moving = threading.Lock()


_host_froze = False
"""Whether ``paused_gc`` found objects the host froze: it stops asking, as ``get_freeze_count``
counts them one by one (a service's frozen start-up, ~40,000 objects: ~1 ms, more than the rest
of opening a short session), while none frozen is an empty list, and frozen objects stay
frozen. A host that unfreezes them later only loses the move to the oldest generation."""


def parse_payload(payload: bytes) -> Any:
    """A stored entry's JSON value. jiter stops at 254 levels of nesting, where the encoder that
    stored the entry goes to ~1,000 (a model's arguments, a tool's details): an entry between
    the two is read by the standard library's parser instead, which is slower but has no such
    limit, rather than being a damaged row each time the session is opened. ``ValueError`` for
    what is no JSON."""
    try:
        return jiter.from_json(payload)
    except ValueError as exc:
        if "recursion limit" not in str(exc):
            raise
        return load_line(payload)


class CorruptSessionError(SessionError):
    """The stored tree is inconsistent (a parent cycle, a payload that is not an object)."""


class Node:
    """One entry: indexed fields always, the payload dict on demand."""

    __slots__ = ("_entry", "_payload", "created", "id", "parent_id", "type")

    def __init__(
        self,
        id: str,
        parent_id: str | None,
        type: str,
        created: int,
        payload: bytes | None = None,
        entry: EntryDict | None = None,
    ) -> None:
        self.id = id
        self.parent_id = parent_id
        self.type = type
        self.created = created
        self._payload = payload
        self._entry = entry

    @property
    def entry(self) -> EntryDict:
        if self._entry is None:
            try:
                value: Any = parse_payload(self._payload or b"null")
            except ValueError as exc:  # a row damaged outside tether: one line, not a traceback
                raise CorruptSessionError(f"entry {self.id!r}: payload is not JSON ({exc})") from None
            if not isinstance(value, dict):
                raise CorruptSessionError(f"entry {self.id!r}: payload is not a JSON object")
            self._entry = cast(EntryDict, value)
            self._payload = None
        return self._entry

    @property
    def message(self) -> dict[str, Any] | None:
        """The message of a ``message`` entry (``None`` for other types)."""
        if self.type != "message":
            return None
        message = self.entry.get("message")
        return cast("dict[str, Any]", message) if isinstance(message, dict) else None


class EntryTree:
    """Entries of one session by id, in append order."""

    def __init__(self, nodes: Iterable[Node] = ()) -> None:
        self._all: dict[str, Node] = {node.id: node for node in nodes}
        self._unbuilt: list[EntryDict] = []
        """Entries ``append`` took whose nodes are not made yet (``_nodes`` makes them)."""

    @property
    def _nodes(self) -> dict[str, Node]:
        """Every entry's node, those ``append`` took made first."""
        if self._unbuilt:
            nodes, unbuilt, self._unbuilt = self._all, self._unbuilt, []
            for entry in unbuilt:
                nodes[entry["id"]] = Node(
                    entry["id"], entry.get("parentId"), entry["type"], entry["timestamp"], entry=entry
                )
        return self._all

    @classmethod
    def from_stored(cls, stored: Iterable[StoredEntry]) -> EntryTree:
        # A StoredEntry's fields are Node's first parameters, in order: no per-field lookups.
        return cls(starmap(Node, stored))

    def add(self, entry: EntryDict) -> Node:
        node = Node(entry["id"], entry.get("parentId"), entry["type"], entry["timestamp"], entry=entry)
        self._nodes[node.id] = node
        return node

    def append(self, entry: EntryDict) -> None:
        """``add``, its node made when the tree is next read: a run's every message is added as
        it ends, and nothing reads the tree during a run (its context holds the messages), so a
        node made then (~30 bytecodes a stored message, P6) was seldom used before the
        session's next open."""
        self._unbuilt.append(entry)

    def add_stored(self, stored: StoredEntry) -> Node:
        """An entry as read from the store (one another process appended), parsed on access."""
        node = Node(*stored)
        self._nodes[node.id] = node
        return node

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self._nodes.values())

    def newest_id(self) -> str | None:
        """The greatest entry id (ids sort by creation), ``None`` for an empty tree."""
        return max(self._nodes, default=None)

    def last_id(self) -> str | None:
        """The id of the entry added last (for a tree read from the store: appended last)."""
        return next(reversed(self._nodes), None)

    def get(self, entry_id: str) -> Node | None:
        return self._nodes.get(entry_id)

    def path(self, leaf_id: str | None) -> list[Node]:
        """Root-to-leaf entries ending at ``leaf_id`` (empty for ``None``)."""
        path: list[Node] = []
        append = path.append
        current = leaf_id
        nodes = self._nodes
        # A path visits each entry at most once, so one more step than there are entries is a cycle.
        for _ in range(len(nodes) + 1):
            if current is None:
                path.reverse()
                return path
            node = nodes.get(current)
            if node is None:
                raise CorruptSessionError(f"entry {current!r} is referenced as a parent but missing")
            append(node)
            current = node.parent_id
        raise CorruptSessionError(f"parent links of entry {leaf_id!r} form a cycle")

    def walk_back(self, leaf_id: str | None) -> Iterator[Node]:
        """``path(leaf_id)`` from the leaf towards the root, one entry at a time: a reader of the
        last few entries (a transcript's last screen) pays for those, not for the whole path."""
        current = leaf_id
        nodes = self._nodes
        for _ in range(len(nodes) + 1):
            if current is None:
                return
            node = nodes.get(current)
            if node is None:
                raise CorruptSessionError(f"entry {current!r} is referenced as a parent but missing")
            yield node
            current = node.parent_id
        raise CorruptSessionError(f"parent links of entry {leaf_id!r} form a cycle")

    def children(self, entry_id: str | None) -> list[Node]:
        return [n for n in self._nodes.values() if n.parent_id == entry_id]
