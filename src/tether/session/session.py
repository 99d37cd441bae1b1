"""``Session``: one open session — its entry tree, active leaf and rebuilt context.

All history is written here, by the runtime: entry ids come from the monotonic id generator
(seeded with the newest stored id, so they keep sorting even across processes with skewed
clocks) and timestamps from the clock, never from the caller. A writable session holds the
store's writer lease for its whole life; a read-only one can look but not append.

A session created with ``deferred=True`` (``SessionManager.create``; what every front end does)
is not in the store until its first message: the entries before it (model, thinking level,
system prompt, a title) are held in this handle, and the first message's append creates the
session, takes its writer lease and writes them all. A run that fails before any message, or an
interactive start left at once, stores nothing.

Appends are committed before they return, unless writes are deferred (``defer_writes``, what
``AgentSession`` does for the length of a run): then the store's writer thread commits them,
in order, and ``settle_writes`` waits for them without blocking the event loop. Until then they
are in this handle's tree and context but not yet in the database for other readers; anything
that moves the leaf or closes the session waits for them first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from tether.agent import AgentEvent
from tether.session.branching import settle_leaf
from tether.session.context import SessionContext, build_context, compaction_message, context_message
from tether.session.labels import fold_labels
from tether.session.prompt import PromptInput, synthetic_message
from tether.session.replay import replay_events
from tether.store.entries import CUSTOM_TYPE, EntryDict
from tether.store.ids import new_id
from tether.store.store import (
    EntryNotFoundError,
    SessionError,
    SessionRecord,
    SessionStore,
    StoredEntry,
    WriterLease,
    advanced_record,
)
from tether.store.tree import EntryTree, Node
from tether.wire import AgentMessage, ModelInfo, decode_message

if TYPE_CHECKING:
    from tether.store.writer import Commit


class _AtLeaf:
    """Marker: append under the current leaf."""


AT_LEAF = _AtLeaf()

_UNKNOWN: tuple[None, None, bool] = (None, None, False)
"""What ``Session._known_ids`` has for a message it does not know."""


class ReadOnlySessionError(SessionError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} is read-only here (opened read-only, or closed)")


class SessionBoundError(SessionError):
    """A ``Session`` handle given to a second ``AgentSession``: the handle is the first core's,
    which releases it (and its writer lock) when it closes, under the second one."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id!r}: this Session handle belongs to another AgentSession already "
            "(closing that one releases it); close that one, then open the session again for this one"
        )


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Session:
    """An open session. Create or open one through ``SessionManager``."""

    def __init__(
        self,
        store: SessionStore,
        record: SessionRecord,
        tree: EntryTree,
        lease: WriterLease | None,
        *,
        unstored: bool = False,
    ) -> None:
        self._store = store
        self._record = record
        self._tree = tree
        self._lease = lease
        self._unstored = unstored
        """Not in the store yet: created when the first message is appended (module docstring)."""
        self._held: list[EntryDict] = []
        """The entries appended while unstored, written with the first message."""
        self._dropped = False
        """Closed while unstored: nothing was written, nothing will be."""
        self._created_title = record.title
        """The title the session was created with (held ``session_info`` entries add theirs)."""
        self._newest_id = tree.newest_id()
        self._context = build_context(tree.path(record.leaf_id))
        self._ids: dict[int, tuple[AgentMessage, str, bool]] = {}
        """``id()`` of a message → the message, its entry id, and whether this handle appended
        it (``_known_ids``; a context taking the message in says no: it is then the tree's own)."""
        self._indexed: tuple[SessionContext | None, int] = (None, 0)
        """The context ``_known_ids`` took in, and how many of its messages."""
        self._next_id: Callable[[], str] | None = None
        self._deferring = False
        self._commits: list[Commit] = []
        """The batches holding deferred appends not known to be committed yet, oldest first (one
        per batch, not per append: every append of a batch shares its commit)."""
        self._uncounted: list[EntryDict] = []
        """Deferred appends' entries not yet counted into ``_record`` (``record`` counts them, once,
        when asked: counting each append as it was queued cost a stored message ~8 µs, and the
        row is seldom read during a run)."""
        self._uncounted_leaf = ""
        self._uncounted_updated = 0
        self.bound = False
        """Bound to an ``AgentSession``: the handle is that core's from then on (it closes it), and
        another core refuses it (``SessionBoundError``)."""
        self.settings_checked: tuple[object, ...] | None = None
        """What ``tether.session.wiring.record_settings`` last found nothing to record for."""
        self._unplaced = 0
        """Entries ``catch_up`` added that the context has not taken in (yet): how far back from
        a new leaf the old one can be, when the new leaf descends from it."""

    # -- identity and state ----------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._record.id

    @property
    def record(self) -> SessionRecord:
        """The session row as of the last write by this handle."""
        if self._uncounted:
            self._record = advanced_record(
                self._record, self._uncounted, self._uncounted_leaf, self._uncounted_updated
            )
            self._uncounted = []
        return self._record

    @property
    def readonly(self) -> bool:
        if self._unstored:
            return self._dropped
        return self._lease is None or not self._lease.active

    @property
    def stored(self) -> bool:
        """Whether the session is in the store (``False`` until the first message of a session
        created with ``deferred=True``)."""
        return not self._unstored

    @property
    def leaf_id(self) -> str | None:
        return self._uncounted_leaf if self._uncounted else self._record.leaf_id

    @property
    def last_entry_id(self) -> str | None:
        """The entry appended last (on any branch), ``None`` for an empty session."""
        return self._tree.last_id()

    @property
    def title(self) -> str | None:
        return self.record.title

    @property
    def context(self) -> SessionContext:
        """Messages (with entry ids) and folded settings at the leaf. Treat as read-only."""
        return self._context

    @property
    def messages(self) -> list[AgentMessage]:
        return self._context.messages

    def message_id(self, message: AgentMessage) -> str | None:
        """Entry id of a context message (or of one this handle appended, or a stored one it had
        in its context before a branch or compaction), by identity."""
        return self._known_ids().get(id(message), _UNKNOWN)[1]

    def message_ids(self, messages: Sequence[AgentMessage]) -> list[str | None]:
        """``message_id`` for many messages at once."""
        get = self._known_ids().get
        return [get(id(message), _UNKNOWN)[1] for message in messages]

    def _known_ids(self) -> dict[int, tuple[AgentMessage, str, bool]]:
        """``id()`` of each message this handle appended or has had in its context → the message,
        its entry id and whether it was appended here, taking in the context's new messages
        first: every message's end asks for its id, and every request for its messages' ids,
        which a scan of the whole context made cost the context's length (~10 µs a stored
        message at P6's 14 entries; more as a session grows). A message appended here stays
        known after a branch or compaction left it out of the context, and so does a stored
        message the context held (a run's messages, those it started with included, are asked
        for then too), and a durable replay's message, which is not the object the context holds
        (``use_ids``). The map holds each message, so no other object can come to have its
        ``id()``; the context only grows while it is the same object, so a new one (or one that
        shrank) is taken in again whole, and the objects the old one alone held are dropped
        (``_forget_rebuilt``)."""
        context, count = self._indexed
        messages = self._context.messages
        if context is not self._context or count > len(messages):
            self._forget_rebuilt()
            count = 0
        if count < len(messages):
            ids, entry_ids = self._ids, self._context.entry_ids
            for i in range(count, len(messages)):
                message = messages[i]
                ids[id(message)] = (message, entry_ids[i], False)
        self._indexed = (self._context, len(messages))
        return self._ids

    def _forget_rebuilt(self) -> None:
        """Drop the messages a context built afresh (compaction and branch summaries, edited
        messages): each rebuild makes new ones, so a handle that rebuilds on every change (a
        follower of a compacted session) would keep them all until closed. What stays is what
        the tree holds anyway (a stored message's own object) and what this handle appended;
        the context being taken in adds its own again. Costs the map's length, once a rebuild."""
        tree = self._tree
        kept: dict[int, tuple[AgentMessage, str, bool]] = {}
        for key, known in self._ids.items():
            message, entry_id, appended = known
            node = tree.get(entry_id)
            if appended or (node is not None and node.message is message):
                kept[key] = known
        self._ids = kept

    # -- reading the tree ------------------------------------------------------------------------

    def entry(self, entry_id: str) -> EntryDict:
        node = self._tree.get(entry_id)
        if node is None:
            raise EntryNotFoundError(self.id, entry_id)
        return node.entry

    def entries(self) -> list[EntryDict]:
        """Every entry, all branches, in append order."""
        return [node.entry for node in self._tree]

    def path(self, leaf_id: str | None = None) -> list[EntryDict]:
        """Root-to-leaf entries of the active path (or of the path ending at ``leaf_id``)."""
        if leaf_id is not None and leaf_id not in self._tree:
            raise EntryNotFoundError(self.id, leaf_id)
        return [node.entry for node in self._tree.path(leaf_id or self.leaf_id)]

    def path_nodes(self, leaf_id: str | None = None) -> list[Node]:
        """Like ``path`` but as tree nodes (payloads parsed on access); for compaction and tools."""
        if leaf_id is not None and leaf_id not in self._tree:
            raise EntryNotFoundError(self.id, leaf_id)
        return self._tree.path(leaf_id or self.leaf_id)

    def walk_back(self) -> Iterator[Node]:
        """The active path's nodes from the leaf towards the root, lazily (``path_nodes`` reversed)."""
        return self._tree.walk_back(self.leaf_id)

    def children(self, entry_id: str | None) -> list[EntryDict]:
        return [node.entry for node in self._tree.children(entry_id)]

    def labels(self) -> dict[str, str]:
        """Entry id → label, from every label entry of the session (newest wins)."""
        marks = fold_labels(node.entry for node in self._tree if node.type == "label")
        return {target: label.text for target, label in marks.items()}

    def replay(self, *, full_history: bool = True) -> Iterator[AgentEvent]:
        """Re-emit the active path as agent events (``agent_start`` … ``agent_end``) for UIs.

        ``full_history`` replays every message of the path, compacted ones included, with the
        compaction summary where it happened; otherwise only the current context.
        """
        if full_history:
            messages = [m for node in self._tree.path(self.leaf_id) if (m := _history_message(node))]
        else:
            messages = list(self._context.messages)
        return replay_events(messages)

    # -- following another writer ----------------------------------------------------------------

    def catch_up(self, record: SessionRecord, entries: Sequence[StoredEntry]) -> list[Node]:
        """Take in what another process wrote to this read-only session (a change of
        ``tether.store.follow.follow_changes``): the new entries join the tree, the row's leaf
        becomes this handle's. Returns the nodes of the entries that were new here.

        It costs what was appended, not the session's length: when the new leaf descends from
        the old one through new entries, the context is extended by them, as an append by this
        handle would; only a leaf that moved elsewhere (a branch) or past a compaction rebuilds
        it, from the tree in memory. Either way nothing is read again from the store.
        """
        if not self.readonly:
            raise SessionError(
                f"session {self.id!r} is open for writing here; only a read-only handle follows another writer"
            )
        nodes = [self._tree.add_stored(stored) for stored in entries if stored.id not in self._tree]
        self._unplaced += len(nodes)
        old_leaf = self.leaf_id
        self._record, self._uncounted = record, []  # the store's row counts every entry
        if record.leaf_id != old_leaf:
            steps = self._steps_down(old_leaf, record.leaf_id)
            if steps is None:
                self._context = build_context(self._tree.path(record.leaf_id))
                self._unplaced = 0
            else:
                for node in steps:
                    self._context.add(node)
                self._unplaced -= len(steps)
        return nodes

    def _steps_down(self, old_leaf: str | None, new_leaf: str | None) -> list[Node] | None:
        """The nodes after ``old_leaf`` down to ``new_leaf``, root side first, when ``new_leaf``
        descends from it through unplaced entries none of which is a compaction; else ``None``.
        Walks at most as many entries as are unplaced."""
        steps: list[Node] = []
        for node in self._tree.walk_back(new_leaf):
            if node.id == old_leaf:
                break
            if len(steps) == self._unplaced or node.type == "compaction":
                return None
            steps.append(node)
        else:
            if old_leaf is not None:  # reached the root: the new leaf is on another branch
                return None
        steps.reverse()
        return steps

    # -- writing ---------------------------------------------------------------------------------

    def append_message(self, message: AgentMessage) -> str:
        """Persist a message produced by the runtime (validated first); returns its entry id."""
        return self.append_messages([message])[0]

    def append_messages(self, messages: Sequence[AgentMessage], *, checked: bool = False) -> list[str]:
        """Persist several messages in one transaction, in order.

        Each is validated first (``WireError`` naming the path), so the store never holds a
        message a later load would choke on; ``checked=True`` skips that for messages the caller
        knows to be valid (built by tether, or validated where they came in: ``AgentSession``).
        """
        if not checked:
            for i, message in enumerate(messages):
                decode_message(message, f"messages[{i}]" if len(messages) > 1 else "message")
        ids = self._append([{"type": "message", "message": m} for m in messages])
        for message, entry_id in zip(messages, ids, strict=True):
            self._ids[id(message)] = (message, entry_id, True)
        return ids

    def record_message(self, message: AgentMessage, *, checked: bool = False) -> None:
        """Persist a message a run finished, unless this handle holds it already (a durable
        replay's, ``use_ids``); ``checked`` as for ``append_messages``.

        A run's every message comes here (``AgentSession``), so the usual case, writes deferred
        to the writer thread with ids from the clock, is written out as one straight path: the
        entry, its queueing, the tree, the context and the known ids, what ``_append`` and
        ``_write`` do for any list of entries in ~45 calls (P6: ~1,000 bytecodes a stored
        message on the event loop's thread). Anything else takes that general path."""
        indexed, count = self._indexed
        context = self._context
        # the map as it is when the context is taken in already (as the last append left it)
        known = self._ids if indexed is context and count == len(context.messages) else self._known_ids()
        if id(message) in known:
            return
        lease = self._lease
        if not self._deferring or self._next_id is not None or lease is None or not lease.active:
            self.append_messages([message], checked=checked)
            return
        if not checked:
            decode_message(message, "message")
        commits = self._commits
        if commits and commits[0].finished:
            self._raise_failed_write()  # a later entry must not hang off one that was not written
        parent = self._uncounted_leaf if self._uncounted else self._record.leaf_id
        timestamp = time.time_ns() // 1_000_000
        entry_id = self._newest_id = new_id(self._newest_id, timestamp)  # the entry's own ms
        entry = {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": timestamp,
            "message": message,
        }
        _note_commit(commits, self._store.append_later(lease, [entry], entry_id, timestamp))
        self._uncounted.append(entry)
        self._uncounted_leaf = entry_id
        if timestamp > self._uncounted_updated:
            self._uncounted_updated = timestamp
        self._tree.append(entry)
        messages = context.messages
        messages.append(message)
        context.entry_ids.append(entry_id)
        context.tokens.add(message)
        known[id(message)] = (message, entry_id, True)
        self._indexed = (context, len(messages))  # taken in: ``_known_ids`` need not look at it

    def append_synthetic(self, prompt: PromptInput) -> str:
        """Persist a hook's ``{role, parts}`` message with a runtime id and timestamp."""
        model = self._context.model.info if self._context.model else None
        message = synthetic_message(prompt, model=model, timestamp=now_ms())
        return self.append_message(message)

    def set_model(self, model: ModelInfo) -> str:
        from tether.ai.shown_url import stored_descriptor  # no headers, no credentials in the URL

        stored = stored_descriptor(model)
        return self._append(
            [{"type": "model_change", "provider": model["provider"], "modelId": model["id"], "model": stored}]
        )[0]

    def set_thinking_level(self, level: str) -> str:
        return self._append([{"type": "thinking_level_change", "thinkingLevel": level}])[0]

    def set_service_tier(self, tier: str | None) -> str:
        return self._append([{"type": "service_tier_change", "serviceTier": tier}])[0]

    def set_system_prompt(self, prompt: str) -> str:
        return self._append([{"type": "system_prompt_change", "systemPrompt": prompt}])[0]

    def append_custom(self, custom_type: str, data: Any) -> str:
        """Opaque host data under a namespaced type (``myext.state``); never sent to the model."""
        if not CUSTOM_TYPE.match(custom_type):
            raise ValueError(
                f"custom type {custom_type!r} must be namespaced, e.g. 'myext.state' or 'acme:todo'"
            )
        return self._append([{"type": "custom", "customType": custom_type, "data": data}])[0]

    def label(self, entry_id: str, label: str | None) -> str:
        """Label an entry (``None`` removes the label)."""
        if entry_id not in self._tree:
            raise EntryNotFoundError(self.id, entry_id)
        return self._append([{"type": "label", "targetId": entry_id, "label": label}])[0]

    def rename(self, title: str) -> str:
        return self._append([{"type": "session_info", "title": title}])[0]

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        tokens_after: int | None = None,
        details: Any = None,
    ) -> str:
        """Persist a compaction; the context is rebuilt from the new summary."""
        if first_kept_entry_id is not None and first_kept_entry_id not in self._tree:
            raise EntryNotFoundError(self.id, first_kept_entry_id)
        entry: EntryDict = {
            "type": "compaction",
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": tokens_before,
        }
        if tokens_after is not None:
            entry["tokensAfter"] = tokens_after
        if details is not None:
            entry["details"] = details
        return self._append([entry])[0]

    def branch(self, entry_id: str | None, *, summary: str | None = None) -> str | None:
        """Move the leaf to ``entry_id`` (``None``: before the first entry); returns the new leaf.

        A point between an assistant's tool calls and their results moves forward to the last
        result when the tree has them, else ``BranchError``. With ``summary``, a
        ``branch_summary`` of the branch being left is appended at the new point and becomes
        the leaf.
        """
        self._writable()
        if entry_id is not None and entry_id not in self._tree:
            raise EntryNotFoundError(self.id, entry_id)
        leaf = settle_leaf(self._tree, entry_id)
        old_leaf = self.leaf_id
        if summary is not None:
            return self._append(
                [{"type": "branch_summary", "fromId": old_leaf or "", "summary": summary}], parent=leaf
            )[0]
        if self._unstored:
            self._record = replace(self._record, leaf_id=leaf, updated=now_ms())
        else:
            assert self._lease is not None
            self.flush_writes()
            self._record, self._uncounted = self._store.set_leaf(self._lease, leaf, now_ms()), []
        self._context = build_context(self._tree.path(leaf))
        return leaf

    def use_ids(self, next_id: Callable[[], str] | None) -> None:
        """Take entry ids from ``next_id`` instead of the clock (``None``: the clock again).

        For a durable run (``tether.durable``), whose ids are deterministic per workflow step: when
        a crashed run is replayed, an append whose id the tree already holds is the same entry
        written before the crash, so it is not written again (the leaf still moves onto it). A
        held id of another entry type means the replay diverged: ``SessionError``.
        """
        self._next_id = next_id

    def defer_writes(self) -> None:
        """Let the store's writer thread commit the next appends (see the module docstring)."""
        self._writable()
        self._deferring = True

    async def settle_writes(self) -> None:
        """Wait until every deferred append is committed, without blocking the event loop; then
        appends are committed before they return again. Raises the first append's failure."""
        self._deferring = False
        if self._commits:
            await self._commits[-1].settled()  # the last one done means all are: one queue
            self._raise_failed_write()

    async def written(self) -> None:
        """Wait until the appends made so far are committed, deferring as before: for a caller
        that hands the session's id to another process (which will look for it in the store)."""
        if self._commits:
            await self._commits[-1].settled()

    def flush_writes(self) -> None:
        """``settle_writes`` for a caller that may block: wait for the deferred appends."""
        self._deferring = False
        if self._commits:
            self._commits[-1].wait()
            self._raise_failed_write()

    def close(self) -> None:
        """Wait for deferred appends, then release the writer lease (the handle stays readable).
        A session still unstored (no message) is dropped: nothing of it was ever written."""
        self._dropped, self._held = True, []  # an unstored session is read-only from now on
        try:
            self.flush_writes()
        finally:
            if self._lease is not None:
                self._lease.release()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------------

    def _writable(self) -> None:
        if self.readonly:
            # A deferred append that failed because the lease was lost (another writer took the
            # session) says so; "read-only here" sent the reader looking for who closed it.
            self._raise_failed_write()
            raise ReadOnlySessionError(self.id)

    def _store_now(self) -> None:
        """Start the session in the store and take its writer lease: the first message came.
        The row goes with the append of the held entries and the message (``acquire_new_writer``),
        which brings it to what this handle has. A failure here (the lock file on a full disk)
        stores nothing: the next append tries again."""
        r = self._record
        # The row as the store creates it: no entries, no counters.
        row = SessionRecord(
            r.id, r.cwd, self._created_title, r.created, r.created, None, r.version,
            r.parent_session_id, r.parent_entry_id, None, 0, 0, 0.0, 0, 0, 0, 0,
        )  # fmt: skip
        self._lease = self._store.acquire_new_writer(row)
        self._record, self._unstored = row, False

    def _append(self, partials: list[dict[str, Any]], *, parent: str | _AtLeaf | None = AT_LEAF) -> list[str]:
        """Give entries ids, parents and timestamps, write them in one transaction, update state.

        Entries chain from ``parent`` (default: the current leaf); the last becomes the leaf.
        Settings entries, messages appended directly (``append_messages``: synthetic prompts,
        a library's own) and those ``record_message`` passes on (a durable replay's, undeferred
        writes) come this way, so the usual case (ids from the clock, none of them held yet)
        skips what only a replay needs (``_replayed``, a tree lookup). ``record_message`` is this
        and ``_write``'s deferred branch for one message: a change to what an entry holds or how
        it is queued goes into both.
        """
        self._writable()
        moved = parent is not AT_LEAF
        if isinstance(parent, _AtLeaf):
            parent = self.leaf_id
        timestamp = now_ms()
        next_id = self._next_id
        entries: list[EntryDict] = []
        for partial in partials:
            if next_id is None:
                # above its floor (the newest), of the entries' time: the clock read once
                entry_id = self._newest_id = new_id(self._newest_id, timestamp)
            else:
                entry_id = next_id()
                self._newest_id = max(entry_id, self._newest_id or entry_id)
            entries.append(
                {"type": partial["type"], "id": entry_id, "parentId": parent, "timestamp": timestamp}
                | partial
            )
            parent = entry_id
        fresh = entries if next_id is None else [e for e in entries if not self._replayed(e)]
        if self._unstored and not any(e["type"] == "message" for e in fresh):
            self._held.extend(fresh)  # no message yet: nothing is stored (module docstring)
            self._record = advanced_record(self._record, fresh, cast(str, parent), timestamp)
        else:
            if self._unstored:
                self._store_now()
                fresh, self._held = [*self._held, *fresh], []
            self._write(fresh, cast(str, parent), timestamp)
        tree = self._tree
        if next_id is None:
            nodes = [tree.add(e) for e in entries]
        else:
            nodes = [tree.get(e["id"]) or tree.add(e) for e in entries]
        rebuild = moved
        for node in nodes:
            rebuild = rebuild or node.type == "compaction"
        if rebuild:
            self._context = build_context(self._tree.path(self.leaf_id))
        else:
            for node in nodes:
                self._context.add(node)
        return [e["id"] for e in entries]

    def _write(self, fresh: list[EntryDict], leaf: str, timestamp: int) -> None:
        """Store ``fresh`` with ``leaf`` as the new leaf: now, or by the writer thread when
        writes are deferred; only the leaf moves when every entry was a durable replay's."""
        assert self._lease is not None
        if self._deferring and fresh:
            self._raise_failed_write()  # a later entry must not hang off one that was not written
            _note_commit(self._commits, self._store.append_later(self._lease, fresh, leaf, timestamp))
            self._uncounted += fresh
            self._uncounted_leaf, self._uncounted_updated = leaf, max(self._uncounted_updated, timestamp)
        else:
            self.flush_writes()  # after the deferred ones, in order
            self._uncounted = []  # the store's row below counts them
            if fresh:
                self._record = self._store.append(self._lease, fresh, leaf, timestamp)
            else:
                self._record = self._store.set_leaf(self._lease, leaf, timestamp)

    def _replayed(self, entry: EntryDict) -> bool:
        """Whether a durable replay's entry is already stored (see ``use_ids``)."""
        held = self._tree.get(entry["id"]) if self._next_id is not None else None
        if held is None:
            return False
        if held.type != entry["type"] or held.parent_id != entry.get("parentId"):
            raise SessionError(
                f"session {self.id!r}: entry {entry['id']} replayed as a {entry['type']} "
                f"where a {held.type} is stored: the durable run did not replay as it first ran"
            )
        return True

    def _raise_failed_write(self) -> None:
        """Forget the batches of deferred appends that were committed; raise the failure of the
        first that failed."""
        commits, lease = self._commits, self._lease
        while commits and commits[0].finished:
            assert lease is not None  # a commit is queued only under the lease, never dropped
            failure = commits[0].failure(lease)
            if failure is not None:
                raise failure  # left queued: every later call says it again
            commits.pop(0)


def _note_commit(commits: list[Commit], committed: Commit) -> None:
    """Keep the batch ``committed`` an append went into, unless an earlier append of the
    session went into it too: consecutive appends share the batch, so it can only be the last."""
    if not commits or commits[-1] is not committed:
        commits.append(committed)


def _history_message(node: Node) -> AgentMessage | None:
    if node.type == "compaction":
        return compaction_message(node.entry)
    return context_message(node)
