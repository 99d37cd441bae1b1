"""The session operations of ``AgentSession``: new, resume (switch), list, rename, delete, fork,
branch (with or without a summary), compact, tree, export, follow a session another process runs,
and the conversation's stats.

A part of ``AgentSession`` (see ``tether.session.core_state``): each operation moves or reads the
stored session, then gives the agent the session's context again (``_reload``), so the transcript
keeps its one source. Operations that need the store say so by name with ``--no-session``.

Extensions hear of the moves as pi's do: a front end asks ``before_change`` (the
``session_before_switch``/``_fork`` hooks, which may cancel) before it calls ``new_session``,
``switch_session`` or ``fork``, which are plain calls the library's users make too; those then
tell the extensions ``session_shutdown`` and ``session_start`` with pi's ``reason``. ``branch``
is awaited anyway, so it asks ``session_before_tree`` itself and tells ``session_tree`` after.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from tether.ai.abort import AbortController, AbortSignal
from tether.session.core_state import CoreState
from tether.session.events import CompactionReason, compaction_end
from tether.store.errors import SessionError
from tether.wire import AgentMessage

if TYPE_CHECKING:
    from typing import NoReturn

    from tether.session.compaction import CompactionResult
    from tether.session.extensions.api import SessionBeforeResult
    from tether.session.extensions.host import ExtensionHost
    from tether.session.session import Session
    from tether.session.stats import Stats
    from tether.store.store import SessionRecord

MOVE_UNDER_A_RUN = "a run started"
"""The reason a run that starts gives the summary of a move it aborts (``_summarised_move``)."""


class SessionOperations(CoreState):
    """What a user does to the session itself, as opposed to running prompts in it."""

    async def before_change(self, event: dict[str, Any]) -> SessionBeforeResult | None:
        """Ask the extensions' hooks of ``event`` (``session_before_switch``, ``_fork`` or
        ``_tree``, pi's shapes) whether the change may happen: ``SessionChangeCancelled`` (a
        ``SessionError``) when one cancels it, else what they decided (``None``: no extensions)."""
        host = self._extensions()
        return await host.before_session_change(event) if host is not None else None

    async def before_switch(self, reason: Literal["new", "resume"], target: str | None = None) -> None:
        """``session_before_switch`` for a new session, or for resuming ``target`` (an id or a
        ``session_file``; the hooks get its ``session_file``, as pi names sessions)."""
        event: dict[str, Any] = {"type": "session_before_switch", "reason": reason}
        if target is not None:
            store_path = self.store_path
            in_store = store_path is not None and "/" not in target and os.sep not in target
            event["targetSessionFile"] = f"{store_path}/{target}" if in_store else target
        await self.before_change(event)

    async def before_fork(self, entry_id: str | None, position: Literal["before", "at"]) -> None:
        """``session_before_fork``: a fork ``before`` the user message ``entry_id``, or a copy
        ``at`` the entry (``None``: where the session is now, ``/clone``)."""
        if entry_id is None and self._session is not None:
            entry_id = self._session.leaf_id
        await self.before_change({"type": "session_before_fork", "entryId": entry_id, "position": position})

    def _extensions(self) -> ExtensionHost | None:
        return self.resources.extensions if self.resources is not None else None

    def _replaced(self, reason: str, previous: str | None) -> None:
        host = self._extensions()
        if host is not None:
            host.replaced(reason, previous, self.session_file)

    def new_session(self, parent_session: str | None = None) -> str | None:
        """Start over in a fresh session (same model and settings, but the model and level named
        at start: ``_take_chosen``). ``parent_session`` (an id or a ``session_file``) is recorded
        as the session it was started from, as pi's ``newSession({parentSession})`` does: a fork
        at the first message is a new empty session, yet a child of the one it came from."""
        self.require_open()
        previous = self.session_file
        parent = self._session_id_of(parent_session) if parent_session is not None else None
        sessions = self._sessions
        self._attach(
            sessions.create(self.cwd, deferred=True, parent_session_id=parent)
            if sessions is not None
            else None
        )
        self._take_chosen()
        self.record_settings()
        self._replaced("new", previous)
        return self.session_id

    def switch_session(self, session: str) -> None:
        """Continue another stored session (its settings entries apply): ``session`` is its id or
        the path ``session_file`` gives for it (what pi's clients hand back from ``get_state``).
        Switching to the session already open changes nothing, as in pi.

        As pi 1.6's ``switchSession`` (a fresh session made from the stored one), a conversation
        goes on with its own model and thinking level, not with the ones in use before the
        switch (``_restore_model``), unless they were named at start (``_take_chosen``: pi makes
        the session with its ``--model`` again). Nothing is written to it by the switch itself."""
        sessions = self._require_sessions()
        session_id = self._session_id_of(session)
        if self._session is not None and self._session.id == session_id:
            return
        previous = self.session_file
        self._attach(sessions.open(session_id), load_settings=True)
        if self.chosen_model is None:
            self._restore_model()
        self._take_chosen()
        self._replaced("resume", previous)

    def _take_chosen(self) -> None:
        """Put the session moved to on the model and thinking level named at start
        (``chosen_model``, ``chosen_thinking``), as pi 1.6 re-applies ``--model`` and
        ``--thinking`` to each session it makes for ``/new``, ``/resume`` and ``/fork``; the
        level in effect is then clamped to whichever model goes on (as ``set_model`` does)."""
        agent, chosen = self.agent, self.chosen_model
        if chosen is not None:
            agent.model, agent.stream_fn = chosen.model, chosen.stream_fn
        model = agent.model
        if model is not None:
            from tether.session.model_control import _clamp_thinking  # pyright: ignore[reportPrivateUsage]

            agent.thinking_level = _clamp_thinking(model, self.chosen_thinking or agent.thinking_level)

    def _restore_model(self) -> None:
        """The switched-to conversation's stored model, as a resume without ``--model`` takes it
        (``tether.session.factory._choose_model``): an extension's provider serves it, else the
        registry's entry on the configured endpoint (``restored_model``). One that cannot be
        restored (a provider no longer known, one without a key) leaves the model in use, said
        in a notice, as pi says "Could not restore model". A scripted model is this process's
        script, never a stored one's; a session without messages has no model of its own yet.
        No ``model_select`` hook (pi: restoring a session does not fire it)."""
        agent, session = self.agent, self._session
        stored = session.context.model if session is not None else None
        if session is None or stored is None or stored.provider == "scripted" or not session.messages:
            return
        current = agent.model
        if current is not None and (current["provider"], current["id"]) == (stored.provider, stored.model_id):
            return
        wanted = f"{stored.provider}/{stored.model_id}"
        host = self._extensions()
        served = host.model(wanted) if host is not None else None
        if served is not None:
            model, stream_fn = served
        else:
            from tether.ai.models import default_registry, provider_has_key, restored_model

            try:
                model, stream_fn = restored_model(stored.provider, stored.model_id, stored.info), None
            except LookupError as exc:
                self._not_restored(wanted, str(exc))
                return
            provider = default_registry().find_provider_info(stored.provider)
            if provider is not None and not provider_has_key(provider):
                self._not_restored(wanted, f"no key for {stored.provider}")
                return
        agent.model, agent.stream_fn = model, stream_fn

    def _not_restored(self, wanted: str, why: str) -> None:
        current = self.agent.model
        using = f"{current['provider']}/{current['id']}" if current is not None else "no model"
        self.notify(f"Could not restore model {wanted} ({why}). Using {using}")

    def _session_id_of(self, session: str) -> str:
        """The id in a ``session_file`` path (``<store file>/<id>``), or ``session`` itself. A path
        into another store is refused by name: opening the id here would continue a different
        conversation than the one the caller means (or none)."""
        store_path = self.store_path
        if store_path is None or ("/" not in session and os.sep not in session):
            return session
        folder, _, session_id = session.replace(os.sep, "/").rpartition("/")
        if Path(folder).expanduser().resolve() != Path(store_path).resolve():
            raise SessionError(f"not a session of this store ({store_path}): {session}")
        return session_id

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        """This workspace's sessions with a message, newest first."""
        return self._require_sessions().list(cwd=str(self.cwd), limit=limit, empty=False)

    def rename_session(self, session_id: str, title: str) -> None:
        """Name any stored session (``rename`` names this one)."""
        if self._session is not None and session_id == self._session.id:
            self.rename(title)
            return
        with self._require_sessions().open(session_id) as session:
            session.rename(title)

    def delete_session(self, session_id: str) -> None:
        """Delete another stored session (``/resume``'s delete); the one in use is refused, and
        so is one another process is running (``SessionLockedError``)."""
        if session_id == self.session_id:
            raise ValueError("cannot delete the session in use; switch to another one first")
        self._require_sessions().delete(session_id)

    async def follow(self, stop: threading.Event | None = None) -> None:
        """Watch a read-only session grow: while another process (or host) runs it, take in each
        new entry (``Session.catch_up``: the cost of the entry, not of the session) and tell
        listeners of each new message (``message_start`` and ``message_end``). Returns when
        ``stop`` is set or the session is deleted."""
        from tether.store.follow import follow_changes_async
        from tether.store.store import SessionNotFoundError

        session, sessions = self._require_session(), self._require_sessions()
        if not session.readonly:
            raise ValueError("follow() watches a session opened read-only (SessionChoice(read_only=True))")
        after = session.last_entry_id
        try:
            async for change in follow_changes_async(
                sessions.store, session.id, after=after, stop=stop or threading.Event()
            ):
                if self._session is not session:
                    return  # the session was switched away from: nothing to follow any more
                nodes = session.catch_up(change.record, change.entries)
                self._reload()
                for node in nodes:
                    message = cast(AgentMessage | None, node.message)
                    if message is not None:
                        await self._emit({"type": "message_start", "message": message})
                        await self._emit({"type": "message_end", "message": message})
        except SessionNotFoundError:
            return

    def fork(self, entry_id: str | None = None) -> str:
        """Copy this session up to ``entry_id`` (default: now) into a new one and continue there."""
        forked = self._require_sessions().fork(self._stored_session("fork").id, entry_id)
        previous = self.session_file
        self._attach(forked)
        self._take_chosen()
        self._replaced("fork", previous)
        return forked.id

    async def branch(
        self,
        entry_id: str | None,
        *,
        summarize: bool = False,
        instructions: str | None = None,
        label: str | None = None,
        signal: AbortSignal | None = None,
    ) -> str | None:
        """Move to another point of the tree (``None``: before the first entry); with
        ``summarize``, leave a summary of the branch left there (steered by ``instructions``) and
        return it; ``label`` labels the summary, or the entry moved to.

        The extensions' ``session_before_tree`` hooks are asked first (one may cancel:
        ``SessionChangeCancelled``, or give the summary, the instructions or the label), and
        ``session_tree`` is told after, as in pi. A run that started while the hooks were
        awaited (a front end such as ``tether serve`` takes prompts meanwhile) makes it a
        ``BranchError``: moved under the run, the run's next entries would hang off the new leaf."""
        session = self._require_session()
        old_leaf = session.leaf_id
        preparation = {
            "targetId": entry_id,
            "oldLeafId": old_leaf,
            "userWantsSummary": summarize,
            "customInstructions": instructions,
            "label": label,
        }
        idle = not self.is_running  # an extension's command moves from within its own run
        decided = await self.before_change({"type": "session_before_tree", "preparation": preparation})
        if idle and self.is_running:  # a front end takes prompts while the hooks are awaited
            _refuse("a run started while the extensions were asked about the move: not moved")
        given = decided.summary if decided is not None and summarize else None
        if decided is not None:
            instructions = decided.instructions if decided.instructions is not None else instructions
            label = decided.label if decided.label is not None else label
        if not summarize or given is not None:
            leaf = session.branch(entry_id, summary=given)
        else:
            leaf = await self._summarised_move(session, entry_id, instructions, signal)
        self._reload()
        summary_entry = session.entry(leaf) if summarize and leaf is not None else None
        if summary_entry is not None and summary_entry["type"] != "branch_summary":
            summary_entry = None  # nothing was left behind to summarise
        labelled = summary_entry["id"] if summary_entry is not None else entry_id
        if label is not None and labelled is not None:
            session.label(labelled, label)
        host = self._extensions()
        if host is not None:
            from tether.session.pi_format import to_pi_entry

            host.observe(
                {
                    "type": "session_tree",
                    "newLeafId": session.leaf_id,
                    "oldLeafId": old_leaf,
                    "summaryEntry": to_pi_entry(summary_entry) if summary_entry is not None else None,
                    "fromExtension": given is not None if summary_entry is not None else None,
                }
            )
        return summary_entry["summary"] if summary_entry is not None else None

    async def _summarised_move(
        self, session: Session, entry_id: str | None, instructions: str | None, signal: AbortSignal | None
    ) -> str | None:
        """``branch`` with the summary written by the model. A front end takes prompts while it is
        written (RPC runs ``/tree ID --summary`` beside them): a run that starts aborts the
        summary's request (``MOVE_UNDER_A_RUN``) and the move is refused, as ``abort()`` and
        ``close()`` abort it; a summary that comes in whole all the same is dropped, unstored."""
        from tether.session.compaction import CompactionError, summarize_branch

        controller = AbortController()
        unlink = signal.add_listener(controller.abort) if signal is not None else None
        self._moves.add(controller)
        try:
            return await summarize_branch(
                session,
                entry_id,
                self.model,
                self._stream_fn("branch_summary"),
                instructions=instructions,
                signal=controller.signal,
            )
        except CompactionError:
            if controller.signal.reason is MOVE_UNDER_A_RUN:
                _refuse("a run started while the branch left was summarised: not moved")
            raise
        finally:
            self._moves.discard(controller)
            if unlink is not None:
                unlink()

    async def compact(
        self,
        instructions: str | None = None,
        *,
        reason: CompactionReason = "manual",
        signal: AbortSignal | None = None,
    ) -> CompactionResult:
        """Summarise the older part of the conversation into a compaction entry.

        Raises ``NothingToCompactError`` (a ``CompactionError``) on a conversation still short
        enough to be kept whole (``settings.compaction.keep_recent_tokens``), with a message
        saying so; ``CompactionError`` when the summariser failed or was aborted. ``abort()``
        and ``close()`` abort the summary's request (as ``signal`` does): a summary takes as long
        as a reply, and closing must not wait for it. The entry is stored only once the whole
        summary is in, so an aborted compaction leaves the session as it was.

        One thing at a time, as a run is: beside another compaction, or beside a run it is not
        part of, it raises ``AgentBusyError`` (a tool or an event listener of the run compacts
        between the run's steps); a prompt meanwhile raises it too, unless the compaction was
        aborted: that prompt's run starts once it has settled, as after an aborted run."""
        from tether.session.compaction import CompactionError, compact

        session = self._require_session()
        self._refuse_compaction()
        compaction, unlink = self._compaction_begun(signal)
        try:
            await self._emit({"type": "compaction_start", "reason": reason})
            work = compaction.work = asyncio.ensure_future(
                compact(
                    session,
                    self.model,
                    self._stream_fn(reason=reason),
                    instructions=instructions,
                    settings=self.compaction,
                    signal=compaction.controller.signal,
                )
            )
            try:
                result = await work
            except (CompactionError, asyncio.CancelledError) as exc:
                task = asyncio.current_task()
                if isinstance(exc, asyncio.CancelledError) and (task is None or task.cancelling()):
                    raise  # the caller was cancelled: the summary went with it
                if not isinstance(exc, CompactionError):  # ``close()`` gave up on a model deaf to the abort
                    exc = CompactionError("summarising failed: the compaction was aborted")
                aborted = compaction.controller.signal.aborted
                await self._emit(compaction_end(reason, None, aborted=aborted, error=str(exc)))
                raise exc from None
            self.compactions += 1
            self.last_compaction = result
            if not self.is_running:
                self._reload()
            await self._emit(compaction_end(reason, result.wire()))
            return result
        finally:
            self._compaction_over(compaction, unlink)

    def tree_text(self) -> str:
        from tether.session.tree_view import render_tree

        return render_tree(self._require_session())

    def rename(self, title: str) -> None:
        self._require_session().rename(title)
        self._emit_now({"type": "session_info_changed", "name": title})

    def append_entry(self, custom_type: str, data: Any) -> str | None:
        """Store extension data as a ``custom`` entry and announce it (``entry_appended``); its
        id, or ``None`` when this run keeps no session (``--no-session``). A closed core raises
        its ``SessionError``, as every other use of the session does: ``None`` there read as
        "not stored by choice" and the data was lost without a word. (An extension's
        ``session_shutdown`` hook, called by ``close()`` before the session is released, still
        stores its state.)"""
        session = self._session
        if session is None:
            self.require_open()
            return None
        from tether.session.pi_format import to_pi_entry

        entry_id = session.append_custom(custom_type, data)
        self._emit_now({"type": "entry_appended", "entry": to_pi_entry(session.entry(entry_id))})
        return entry_id

    def export(self, path: Path) -> Path:
        """Write the session to ``path``: HTML for ``.html``, else the JSONL interchange format."""
        session = self._require_session()
        if path.suffix == ".html":
            from tether.ai.paths import config_dir
            from tether.session.export_html import page_colours, write_html

            colours, dark, problem = page_colours(self.settings.theme, config_dir())
            if problem is not None:
                self.notify(problem)
            return write_html(path, session, colours=colours, dark=dark)
        return self._require_sessions().export(self._stored_session("export").id, path)

    def _stored_session(self, operation: str) -> Session:
        """The session, for an operation that reads it back from the store: one without a
        message is not stored yet (``SessionManager.create(deferred=True)``), so say so."""
        session = self._require_session()
        if not session.stored:
            raise SessionError(f"nothing to {operation}: this session has no message yet")
        return session

    @property
    def store_path(self) -> str | None:
        """The store's file, when the sessions live in one (``None`` with ``--no-session`` or on
        PostgreSQL)."""
        store_path = getattr(self._sessions.store, "path", None) if self._sessions is not None else None
        return str(store_path) if store_path is not None else None

    @property
    def session_file(self) -> str | None:
        """A path naming this session: ``<store file>/<session id>``. pi keeps a file per session
        and its clients hand ``get_state``'s ``sessionFile`` back to ``switch_session``; tether
        keeps every session in one database, so a session's path is the database's with its id
        under it (``switch_session`` takes that, and a bare id). ``None`` without a session."""
        store_path = self.store_path
        session_id = self.session_id  # kept after close(), as pi's sessionFile is
        if store_path is None or session_id is None:
            return None
        return f"{store_path}/{session_id}"

    def stats(self) -> Stats:
        from tether.session.stats import Tally, conversation_stats

        if self._tally is None:
            self._tally = Tally()

        session = self._session
        return conversation_stats(
            self.agent.messages,
            self.agent.model,  # none yet: no context window to measure against
            session_id=self.session_id,
            session_file=self.session_file,
            title=session.title if session is not None else None,
            tally=self._tally,
            compacted=session.context.compacted if session is not None else 0,
        )


def _refuse(reason: str) -> NoReturn:
    """A move refused: a run is (or started) on the session's leaf."""
    from tether.session.branching import BranchError  # loads the store: off the print path

    raise BranchError(reason)
