"""The PostgreSQL store's append statement and its parameters (``postgres_store`` runs them).

One statement does it all (one round trip): it checks the fence (the lease's token on the
session row and its advisory lock held, ``LOCK_HELD``), inserts the entries (client-assigned ids, ``ON
CONFLICT DO NOTHING``, so a retried append adds nothing), moves leaf and counters (only when the
entries were new) and notifies the session's followers, all committed together.

Two forms of the entries. A single entry, the common case (each message of a run is appended
alone), goes as plain parameters. Several go as one binary array per column (``%b``), which is
what ``executemany`` of the batch writer needs (one statement text for every group, whatever its
size). Arrays cost the client far more per append: psycopg dumps them in Python, looking for
each list's element type every time (measured: 125 µs of CPU for the five arrays of one entry,
against 30 µs for a statement of twenty plain parameters). As text, they would cost more still:
each array is a literal in which psycopg escapes every quote of every JSON payload, a
regular-expression substitution each (1,000 sessions' runs: 752,000 of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tether.store.entries import EntryDict, encode_entry
from tether.store.store import count_entries

NOTIFY_PREFIX = "tether."
"""Channel of a session's append notifications: this plus the session id (33 bytes, under 64)."""

RECORD_COLUMNS = (
    "id, cwd, title, created, updated, leaf_id, version, parent_session_id, parent_entry_id, "
    "first_prompt, entry_count, message_count, cost, input_tokens, output_tokens, "
    "cache_read_tokens, cache_write_tokens"
)
ENTRY_COLUMNS = "id, parent_id, type, created, payload"

LOCK_HELD = "NOT pg_try_advisory_xact_lock_shared(%s::bigint)"
"""The fence's second half: the session's advisory lock is held (a shared try fails only against
a holder's exclusive lock; when it succeeds, nobody holds it and the write matches nothing).
Asking the server whether the lease's lock connection is alive (``pg_stat_get_activity``) would
say the same more narrowly, but copies every backend's status into the statement's transaction
first: 30% of the append's client CPU, the client sleeping that much longer (P11, paired). Who
else can hold the lock while the row holds this lease's token: a writer between taking the lock
and reading the row (``_try_lock``), which then refuses, or takes the session over by writing its
own token: that update waits for this write's row lock, so it reads what this write stored (and
this write, waiting for its update instead, rechecks the token and matches nothing)."""

_STATEMENT = """
WITH target AS (
    SELECT id FROM tether_sessions WHERE id = %(session)s AND writer_token = %(token)s
        AND NOT pg_try_advisory_xact_lock_shared(%(lock)s::bigint)
    FOR UPDATE
), inserted AS (
    INSERT INTO tether_entries (session_id, id, parent_id, type, created, payload)
    {entries}
    ON CONFLICT (session_id, id) DO NOTHING
    RETURNING 1
), added AS (
    SELECT count(*) AS entries, least(count(*), 1) AS new FROM inserted
)
UPDATE tether_sessions AS s SET
    leaf_id = %(leaf)s, updated = greatest(s.updated, %(updated)s),
    title = coalesce(%(title)s, s.title), first_prompt = coalesce(s.first_prompt, %(first_prompt)s),
    entry_count = s.entry_count + added.entries,
    message_count = s.message_count + added.new * %(messages)s,
    cost = s.cost + added.new * %(cost)s,
    input_tokens = s.input_tokens + added.new * %(input_tokens)s,
    output_tokens = s.output_tokens + added.new * %(output_tokens)s,
    cache_read_tokens = s.cache_read_tokens + added.new * %(cache_read_tokens)s,
    cache_write_tokens = s.cache_write_tokens + added.new * %(cache_write_tokens)s
FROM target, added WHERE s.id = target.id
RETURNING {returning}, pg_notify(%(channel)s, '')
"""
_RETURNING = ", ".join("s." + c.strip() for c in RECORD_COLUMNS.split(","))

APPEND = _STATEMENT.format(
    entries="""SELECT target.id, e.id, e.parent_id, e.type, e.created, e.payload
    FROM target, unnest(
        %(ids)b::text[], %(parents)b::text[], %(types)b::text[], %(created)b::bigint[], %(payloads)b::json[]
    ) WITH ORDINALITY AS e (id, parent_id, type, created, payload, ord)
    ORDER BY e.ord""",
    returning=_RETURNING,
)
"""Any number of entries, as arrays (``append_params``)."""
APPEND_ONE = _STATEMENT.format(
    entries="""SELECT target.id, %(id)s, %(parent)s, %(type)s, %(created)s::bigint, %(payload)s::json
    FROM target""",
    returning=_RETURNING,
)
"""One entry, as plain parameters (``append_one``)."""


def _common(
    session_id: str,
    token: str,
    lock: int,
    entries: Sequence[EntryDict],
    leaf_id: str,
    updated: int,
) -> dict[str, Any]:
    c = count_entries(entries)
    return {
        "session": session_id,
        "token": token,
        "lock": lock,
        "channel": NOTIFY_PREFIX + session_id,
        "leaf": leaf_id,
        "updated": updated,
        "title": c.title,
        "first_prompt": c.first_prompt,
        "messages": c.messages,
        "cost": c.cost,
        "input_tokens": c.input_tokens,
        "output_tokens": c.output_tokens,
        "cache_read_tokens": c.cache_read_tokens,
        "cache_write_tokens": c.cache_write_tokens,
    }


def append_params(
    session_id: str,
    token: str,
    lock: int,
    entries: Sequence[EntryDict],
    leaf_id: str,
    updated: int,
    *,
    many: bool = False,
) -> dict[str, Any]:
    """``APPEND``'s parameters: the entries as columns, the new leaf, what the counters add
    (``many``: a batch of several sessions', see ``encode_entry``)."""
    params = _common(session_id, token, lock, entries, leaf_id, updated)
    params["ids"] = [e["id"] for e in entries]
    params["parents"] = [e.get("parentId") for e in entries]
    params["types"] = [e["type"] for e in entries]
    params["created"] = [e["timestamp"] for e in entries]
    params["payloads"] = [encode_entry(e, many=many).decode() for e in entries]
    return params


def append_one(
    session_id: str, token: str, lock: int, entry: EntryDict, leaf_id: str, updated: int
) -> dict[str, Any]:
    """``APPEND_ONE``'s parameters."""
    params = _common(session_id, token, lock, (entry,), leaf_id, updated)
    params["id"] = entry["id"]
    params["parent"] = entry.get("parentId")
    params["type"] = entry["type"]
    params["created"] = entry["timestamp"]
    params["payload"] = encode_entry(entry).decode()
    return params
