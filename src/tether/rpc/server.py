"""The RPC protocol's commands on an ``AgentSession``, and the session's events as frames.

``RpcServer`` holds the protocol's state over one session — the event filter, the prompt awaiting
its ``prompt_result``, the ids of prompts queued behind it, the dialogs — and gives one short
handler per command, each a thin call into the core. Reading lines, checking them and answering
them is ``tether.rpc.dispatch``'s, the same for every command. The session's events go out as
frames as they happen, shaped by the client's ``set_event_filter``. Nothing a client sends can
end the server: only ``shutdown``, end of input or SIGTERM do (see ``tether.rpc.mode``).

The commands and their shapes are pi's (``docs/rpc.md``); ``tether.rpc.protocol`` types them.
One form serves pi 0.73 and pi 1.x clients: 1.x's additions (``disposition``, ``agent_settled``,
``willRetry``, ``usage`` on ``message_update``, ``get_entries``/``get_tree``, ``clear_queue``) are
new fields, events and commands an 0.73 client never looks at (see docs/rpc.md, "pi versions").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tether.rpc import protocol as p
from tether.rpc.dispatch import ANSWERED, NO_DATA, CommandDispatch, CommandError, WriteFrame, load_command
from tether.session.agent_session import AgentSession
from tether.session.commands import execute_remote, named_command
from tether.session.events import NoticeEvent, Run, SessionEvent, WireEvents, message_text, note_lines
from tether.wire import AgentMessage, ImageContent, ModelInfo

if TYPE_CHECKING:
    from tether.rpc.extension_ui import RpcExtensionUI

ABORT_ANSWER_WAIT = 1.0
"""Seconds ``abort`` waits for the run to end before it answers anyway. A run that ends at once
(the usual case) ends before the answer, as in pi; one stuck on something that cannot be
interrupted (a hung extension hook, a database outage) must not keep the answer from coming."""
CLOSE_WAIT = 5.0
"""Seconds the server waits, at shutdown, for an aborted run and the commands in flight."""


class RpcServer(CommandDispatch):
    """Protocol state over one session: the prompt awaiting its ``prompt_result``, the event
    filter, the ids of prompts queued behind it."""

    def __init__(self, core: AgentSession, write: WriteFrame) -> None:
        super().__init__(write)
        self.core = core
        self._exclude: set[str] = set()
        self._message_update: str = "delta"
        """pi 1.x's ``message_update`` unless a client asks for 0.73's snapshots (``full``)."""
        self._wire = WireEvents(pending=True)
        self._command_runs = 0
        """Extension commands running (answered ``handled`` when done, see ``_extension_command``)."""
        self._agent_started = False
        """An ``agent_start`` came since the last ``agent_settled``."""
        self._run: asyncio.Task[None] | None = None
        self._queued_prompts: list[str | None] = []
        self.shutdown_requested = asyncio.Event()
        from tether.rpc import escalation
        from tether.rpc.extension_ui import RpcExtensionUI

        self.dialogs = RpcExtensionUI(write)
        """Every dialog as ``extension_ui_request`` frames: the extensions' and the question
        before a command runs outside the sandbox (``tether.rpc.escalation``)."""
        self.extension_ui: RpcExtensionUI | None = None
        """``dialogs``, when the session has extensions."""
        host = core.resources.extensions if core.resources is not None else None
        if host is not None:
            self.extension_ui = host.ui = self.dialogs
        if core.approval is not None:
            escalation.install(core.approval, self.dialogs)
        core.subscribe(self._on_event)

    # -- input -------------------------------------------------------------------------------------

    def interrupt(self, line: bytes) -> None:
        """Act now on an ``abort``, ``abort_bash`` or ``abort_retry`` line held back while the
        client is not reading its frames (``tether.rpc.mode``): what it stops stops at once; the
        line is still dispatched, and answered, in its turn."""
        if b"abort" not in line:
            return
        try:
            command = load_command(line)
        except ValueError:
            return
        kind = cast(dict[str, object], command).get("type") if isinstance(command, dict) else None
        if kind == "abort":
            self.dialogs.cancel_all()
            self.core.abort()
        elif kind == "abort_bash":
            self.core.abort_bash()
        elif kind == "abort_retry":
            self.core.abort_retry()

    # -- events ------------------------------------------------------------------------------------

    def _on_event(self, event: SessionEvent) -> None:
        kind = event["type"]
        if event["type"] == "notice":
            # an extension's failure went out as extension_error already (pi 1.6 sends only that)
            if not event.get("failure"):
                self._tell(event)
            return
        if kind not in p.EVENT_TYPES or kind in self._exclude:
            return
        if kind == "agent_start":
            self._agent_started = True
        elif kind == "agent_settled":
            started, self._agent_started = self._agent_started, False
            if self._command_runs and not started:
                return  # an extension command's run that never ran the agent: pi says "handled" only
        self._write(self._wire(event))

    def _tell(self, notice: NoticeEvent) -> None:
        """A notice reaches the client whether or not extensions are loaded: an extension
        command's answer as an ``info`` notify request (pi's way for what an extension says);
        anything else the core says (a model it could not restore, a tool left out) as a
        ``warning`` notify request and, as pi 1.6's RPC mode writes its diagnostics, ``note:``
        lines on stderr, as tether tells what its start-up skipped (``tether.rpc.mode``)."""
        message = notice["message"]
        if "command" in notice:
            self.dialogs.notify(message, "info")
            return
        self.dialogs.notify(message, "warning")
        with contextlib.suppress(OSError, ValueError):  # a client that closed stderr: the frame told it
            sys.stderr.write(note_lines(message))

    # -- runs --------------------------------------------------------------------------------------

    def _start(self, text: str, images: list[ImageContent], request_id: p.RequestId | None) -> None:
        run = self.core.submit(text, images, shell=False)
        run.start()  # running from now on: a prompt right behind this one is queued, not started
        self._run = asyncio.ensure_future(self._prompt(run, request_id))

    async def _prompt(self, run: Run, request_id: p.RequestId | None) -> None:
        status, error = "completed", None
        try:
            await run
        except Exception as exc:
            status, error = "error", run_error(exc)
        else:
            last = self.core.last_assistant()
            if last is not None and last["stopReason"] == "aborted":
                status = "aborted"
            elif last is not None and last["stopReason"] == "error":
                status, error = "error", last.get("errorMessage") or "the model request failed"
        ids, self._queued_prompts = [request_id, *self._queued_prompts], []
        for prompt_id in ids:
            frame: dict[str, Any] = {"type": "prompt_result"}
            if prompt_id is not None:
                frame["id"] = prompt_id
            frame["status"] = status
            if error is not None:
                frame["error"] = error
            self._write(frame)

    async def settle(self, timeout: float | None = None) -> bool:
        """Abort the run in progress, if any, and wait until it has ended and been recorded (at
        most ``timeout`` seconds); whether it has."""
        run = self._run
        self.dialogs.cancel_all()
        if run is not None and not run.done():
            self.core.abort()
            await asyncio.wait([run], timeout=timeout)
            return run.done()
        return True

    async def close(self) -> None:
        """Abort what runs, wait for every command in flight, close the session; a run that
        does not end within ``CLOSE_WAIT`` (stuck on a dead dependency) is left behind, said in
        one line, so closing stdin always ends the process."""
        self.core.abort_bash()
        settled = await self.settle(CLOSE_WAIT)
        others = [t for t in self._tasks if t is not asyncio.current_task()]
        if others:
            await asyncio.wait(others, timeout=CLOSE_WAIT)
        if not settled:
            sys.stderr.write(
                f"tether: the aborted run did not end within {CLOSE_WAIT:g} s; exiting without it\n"
            )
            return
        try:  # shielded: a close cut short would leave the session half closed
            await asyncio.wait_for(asyncio.shield(self.core.close()), CLOSE_WAIT)
        except TimeoutError:
            sys.stderr.write(f"tether: the session did not close within {CLOSE_WAIT:g} s; exiting\n")

    # -- prompting ---------------------------------------------------------------------------------

    def _cmd_prompt(self, params: dict[str, Any]) -> object:
        text: str = params["message"]
        images: list[ImageContent] = params.get("images", [])
        self.core.require_writable()
        if named_command(text) is not None:  # run by the core, never sent to the model as text
            self._spawn(self._finish_async(self._slash_command, params.get("id"), "prompt", params))
            return ANSWERED
        resources = self.core.resources
        if not self.core.is_running and resources is not None and resources.extension_command(text):
            self._command_runs += 1
            self._spawn(self._finish_async(self._extension_command, params.get("id"), "prompt", params))
            return ANSWERED
        if not self.core.is_running:
            self.core.require_model()  # refused before it starts, as pi's preflight refuses it
            # Started, then answered: a run refused (a compaction under way) is its one response,
            # an error; its events wait for the run's task, so none comes before ``started``.
            self._start(text, images, params.get("id"))
            self._respond(params.get("id"), "prompt", data={"disposition": "started"})
            return ANSWERED
        behavior = params.get("streamingBehavior")
        if behavior is None:
            raise CommandError(
                "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') "
                "to queue the message."
            )
        queue = self.core.steer if behavior == "steer" else self.core.follow_up
        disposition = queue(text, images)
        self._queued_prompts.append(params.get("id"))
        return {"disposition": disposition}

    async def _extension_command(self, params: dict[str, Any]) -> object:
        """An extension's slash command: answered ``handled`` once it has run, as pi 1.6 answers
        it, with no ``agent_settled`` of its own (``_on_event``); a prompt the command sends
        starts a run with all of a run's events."""
        try:
            await self.core.submit(params["message"], params.get("images", []), shell=False)
        finally:
            self._command_runs -= 1
        return {"disposition": "handled"}

    async def _slash_command(self, params: dict[str, Any]) -> object:
        """``/tree``, ``/model x``, ...: answered as a prompt ``handled`` without a run (pi 1.x's
        disposition), with the command's text; a refused or failed command is an error."""
        result = await execute_remote(self.core, params["message"], "rpc")
        if result is None or result.error:
            raise CommandError(result.text if result is not None else "not a command")
        return {"disposition": "handled", "text": result.text}

    def _cmd_steer(self, params: dict[str, Any]) -> object:
        return {"disposition": self.core.steer(params["message"], params.get("images", []))}

    def _cmd_follow_up(self, params: dict[str, Any]) -> object:
        return {"disposition": self.core.follow_up(params["message"], params.get("images", []))}

    def _cmd_clear_queue(self, params: dict[str, Any]) -> object:
        taken = self.core.clear_queue()
        return {"steering": list(taken.steering), "followUp": list(taken.follow_up)}

    async def _cmd_abort(self, params: dict[str, Any]) -> object:
        """Answered once the run has ended, or after ``ABORT_ANSWER_WAIT`` whatever it is stuck
        on (it still ends, and says so with ``agent_end``, when what holds it lets go)."""
        self.dialogs.cancel_all()
        self.core.abort()
        await self.settle(ABORT_ANSWER_WAIT)
        return NO_DATA

    async def _cmd_new_session(self, params: dict[str, Any]) -> object:
        from tether.session.extensions.host import SessionChangeCancelled

        await self.settle()
        try:
            await self.core.before_switch("new")
        except SessionChangeCancelled as exc:
            return self._cancelled(exc)
        parent = params.get("parentSession")
        self.core.new_session(parent_session=parent if isinstance(parent, str) and parent else None)
        return {"cancelled": False}

    def _cancelled(self, exc: Exception, **answer: object) -> object:
        """pi's answer when an extension cancelled the switch or fork, and its reason as a notice
        (pi's clients read only ``cancelled``)."""
        self.core.notify(str(exc))
        return {**answer, "cancelled": True}

    # -- state -------------------------------------------------------------------------------------

    def _cmd_get_state(self, params: dict[str, Any]) -> object:
        core = self.core
        agent = core.agent
        session = core.session
        state: dict[str, Any] = {
            "model": agent.model,  # null until one is chosen (pi's optional model)
            "thinkingLevel": agent.thinking_level,  # what core.thinking_level returns, one call less
            "isStreaming": core.is_running,
            "isCompacting": core.is_compacting,
            "steeringMode": agent.steering_mode,
            "followUpMode": agent.follow_up_mode,
        }
        session_file = core.session_file  # not core.stats(): that sums every message's usage
        if session_file is not None:
            state["sessionFile"] = session_file
        if session is None:
            state["sessionId"] = None
        else:
            state["sessionId"] = session.id
            if session.title:
                state["sessionName"] = session.title
        state["autoCompactionEnabled"] = core.settings.compaction.enabled
        state["autoRetryEnabled"] = core.auto_retry
        state["messageCount"] = len(agent.messages)
        state["pendingMessageCount"] = len(agent.steering_queue) + len(agent.follow_up_queue)
        return state

    def _cmd_get_messages(self, params: dict[str, Any]) -> object:
        return {"messages": self.core.messages}

    # -- model and thinking ------------------------------------------------------------------------

    def _cmd_set_model(self, params: dict[str, Any]) -> object:
        return self._set_model(f"{params['provider']}/{params['modelId']}")

    def _set_model(self, spec: str) -> ModelInfo:
        from tether.errors import ModelError

        try:
            return self.core.set_model(spec)
        except ModelError as exc:
            raise CommandError(f"Model not found: {spec} ({exc})") from None

    async def _cmd_get_available_models(self, params: dict[str, Any]) -> object:
        return {"models": await self.core.available_models()}

    async def _cmd_cycle_model(self, params: dict[str, Any]) -> object:
        cycled = await self.core.cycle_model()
        if cycled is None:
            return None
        return {"model": cycled.model, "thinkingLevel": cycled.thinking_level, "isScoped": cycled.is_scoped}

    def _cmd_set_thinking_level(self, params: dict[str, Any]) -> object:
        self.core.set_thinking(params["level"])
        return NO_DATA

    def _cmd_cycle_thinking_level(self, params: dict[str, Any]) -> object:
        level = self.core.cycle_thinking_level()
        return None if level is None else {"level": level}

    def _cmd_get_available_thinking_levels(self, params: dict[str, Any]) -> object:
        from tether.ai.thinking import supported_thinking_levels

        model = self.core.agent.model
        return {"levels": [str(level) for level in supported_thinking_levels(model)] if model else ["off"]}

    # -- queues, compaction, retry -----------------------------------------------------------------

    def _cmd_set_steering_mode(self, params: dict[str, Any]) -> object:
        self.core.agent.steering_mode = params["mode"]
        return NO_DATA

    def _cmd_set_follow_up_mode(self, params: dict[str, Any]) -> object:
        self.core.agent.follow_up_mode = params["mode"]
        return NO_DATA

    async def _cmd_compact(self, params: dict[str, Any]) -> object:
        from tether.session.compaction import CompactionError

        await self.settle()
        try:
            result = await self.core.compact(params.get("customInstructions"))
        except CompactionError as exc:
            raise CommandError(f"Compaction failed: {exc}") from None
        return result.wire()

    def _cmd_set_auto_compaction(self, params: dict[str, Any]) -> object:
        settings = self.core.settings
        self.core.settings = replace(
            settings, compaction=replace(settings.compaction, enabled=params["enabled"])
        )
        return NO_DATA

    def _cmd_set_auto_retry(self, params: dict[str, Any]) -> object:
        self.core.auto_retry = params["enabled"]
        return NO_DATA

    def _cmd_abort_retry(self, params: dict[str, Any]) -> object:
        self.core.abort_retry()
        return NO_DATA

    # -- bash --------------------------------------------------------------------------------------

    async def _cmd_bash(self, params: dict[str, Any]) -> object:
        head: dict[str, Any] = {"type": "bash_execution_update"}
        if params.get("id") is not None:
            head["id"] = params["id"]

        def stream(chunk: str) -> None:
            if "bash_execution_update" not in self._exclude:
                self._write({**head, "delta": chunk})

        message = await self.core.execute_bash(
            params["command"],
            exclude_from_context=params.get("excludeFromContext", False),
            on_output=stream,
        )
        result: dict[str, Any] = {"output": message["output"]}
        if "exitCode" in message:
            result["exitCode"] = message["exitCode"]
        result.update(cancelled=message["cancelled"], truncated=message["truncated"])
        return result

    def _cmd_abort_bash(self, params: dict[str, Any]) -> object:
        self.core.abort_bash()
        return NO_DATA

    # -- session -----------------------------------------------------------------------------------

    def _cmd_get_session_stats(self, params: dict[str, Any]) -> object:
        """As pi 1.6 counts: every message of the session, every branch, compacted ones too (the
        tokens and cost spent so far), with the context's use now."""
        from tether.session.stats import Tally

        s = self.core.stats()
        session = self.core.session
        messages: list[AgentMessage] = (
            [cast(AgentMessage, e["message"]) for e in session.entries() if e["type"] == "message"]
            if session is not None
            else list(self.core.messages)
        )
        totals = Tally().update(messages)
        tokens = totals.tokens
        stats: dict[str, Any] = {}
        if s.session_file is not None:
            stats["sessionFile"] = s.session_file
        stats.update(
            sessionId=s.session_id,
            userMessages=totals.user,
            assistantMessages=totals.assistant,
            toolCalls=totals.calls,
            toolResults=sum(1 for m in messages if m["role"] == "toolResult"),
            totalMessages=len(messages),
            tokens={**tokens, "total": sum(tokens.values())},
            cost=totals.cost,
        )
        if s.context_window:
            percent = s.context_percent
            stats["contextUsage"] = {
                "tokens": s.context_tokens,
                "contextWindow": s.context_window,
                "percent": round(percent, 1) if percent is not None else None,
            }
        return stats

    def _cmd_export_html(self, params: dict[str, Any]) -> object:
        return {"path": str(self.core.export(self._output_path(params, ".html")))}

    def _cmd_export(self, params: dict[str, Any]) -> object:
        return {"path": str(self.core.export(self._output_path(params, ".jsonl")))}

    def _output_path(self, params: dict[str, Any], suffix: str) -> Path:
        given = params.get("outputPath")
        path = (
            Path(os.path.expanduser(given))
            if given
            else Path(f"tether-session-{self.core.session_id}{suffix}")
        )
        if path.suffix != suffix:
            raise CommandError(f"outputPath must end in {suffix}: {path}")
        return path if path.is_absolute() else self.core.cwd / path

    async def _cmd_switch_session(self, params: dict[str, Any]) -> object:
        from tether.session.extensions.host import SessionChangeCancelled
        from tether.store import SessionError

        await self.settle()
        try:
            target: str = params["sessionPath"]
            if target not in (self.core.session_id, self.core.session_file):  # else nothing changes
                await self.core.before_switch("resume", target)
            self.core.switch_session(target)
        except SessionChangeCancelled as exc:
            return self._cancelled(exc)
        except SessionError as exc:
            raise CommandError(str(exc)) from None
        return {"cancelled": False}

    async def _cmd_fork(self, params: dict[str, Any]) -> object:
        from tether.session.extensions.host import SessionChangeCancelled
        from tether.store import SessionError

        await self.settle()
        entry_id: str = params["entryId"]
        session = self.core.session
        if session is None:
            raise CommandError("this run keeps no session (--no-session): nothing to fork")
        try:
            entry = session.entry(entry_id)
        except SessionError as exc:
            raise CommandError(str(exc)) from None
        message = cast(AgentMessage | None, entry.get("message"))
        if entry["type"] != "message" or message is None or message["role"] != "user":
            raise CommandError(f"entry {entry_id} is not a user message (see get_fork_messages)")
        try:
            await self.core.before_fork(entry_id, "before")
        except SessionChangeCancelled as exc:
            return self._cancelled(exc, text=message_text(message))
        parent = entry["parentId"]
        if parent is None:
            self.core.new_session(parent_session=session.id)
        else:
            self.core.fork(parent)
        return {"text": message_text(message), "cancelled": False}

    async def _cmd_clone(self, params: dict[str, Any]) -> object:
        from tether.session.extensions.host import SessionChangeCancelled

        await self.settle()
        session = self.core.session
        if session is None or session.leaf_id is None:
            raise CommandError("Cannot clone session: no current entry selected")
        try:
            await self.core.before_fork(session.leaf_id, "at")
        except SessionChangeCancelled as exc:
            return self._cancelled(exc)
        self.core.fork(session.leaf_id)
        return {"cancelled": False}

    def _cmd_get_fork_messages(self, params: dict[str, Any]) -> object:
        session = self.core.session
        found: list[dict[str, str]] = []
        for entry in session.path() if session is not None else []:
            message = cast(AgentMessage | None, entry.get("message"))
            if entry["type"] == "message" and message is not None and message["role"] == "user":
                found.append({"entryId": entry["id"], "text": message_text(message)})
        return {"messages": found}

    def _cmd_get_entries(self, params: dict[str, Any]) -> object:
        from tether.session.pi_format import to_pi_entry

        session = self.core.session
        if session is None:
            return {"entries": [], "leafId": None}
        entries = session.entries()
        since: str | None = params.get("since")
        if since is not None:
            at = next((i for i, e in enumerate(entries) if e["id"] == since), None)
            if at is None:
                raise CommandError(f"Entry not found: {since}")
            entries = entries[at + 1 :]
        return {"entries": [to_pi_entry(e) for e in entries], "leafId": session.leaf_id}

    def _cmd_get_tree(self, params: dict[str, Any]) -> object:
        from tether.session.pi_format import pi_tree

        session = self.core.session
        if session is None:
            return {"tree": [], "leafId": None}
        return {"tree": pi_tree(session.entries()), "leafId": session.leaf_id}

    def _cmd_get_last_assistant_text(self, params: dict[str, Any]) -> object:
        """As pi 1.6 answers: the last reply that ended normally or has text, so an aborted or
        failed turn without text, or one that only called tools, does not hide the answer before it."""
        for message in reversed(self.core.messages):
            if message["role"] != "assistant":
                continue
            texts = [b["text"] for b in message["content"] if b["type"] == "text"]
            if message["stopReason"] == "stop" or any(t.strip() for t in texts):
                return {"text": "".join(texts).strip() or None}
        return {"text": None}

    def _cmd_set_session_name(self, params: dict[str, Any]) -> object:
        name = params["name"].strip()
        if not name:
            raise CommandError("Session name cannot be empty")
        self.core.rename(name)
        return NO_DATA

    def _cmd_extension_ui_response(self, params: dict[str, Any]) -> object:
        """The answer to a dialog (an extension's, or an escalation's). pi answers nothing here;
        tether keeps its rule of one response per line (a pi client takes a response it did not
        ask for as an event)."""
        if not self.dialogs.answer(params):
            hint = "" if self.extension_ui is not None else " (this session has no extensions)"
            raise CommandError(f"no open extension dialog with id {params['id']!r}{hint}")
        return NO_DATA

    def _cmd_get_commands(self, params: dict[str, Any]) -> object:
        resources = self.core.resources
        commands: list[p.SlashCommandInfo] = [
            {
                "name": c.name,
                "description": c.description,
                "source": c.source,
                "sourceInfo": {"path": c.path, "source": c.source, "scope": c.scope, "origin": "top-level"},
            }
            for c in (resources.commands() if resources is not None else [])
        ]
        return {"commands": commands}

    # -- tether additions --------------------------------------------------------------------------

    def _cmd_set_event_filter(self, params: dict[str, Any]) -> object:
        exclude: list[str] = params.get("exclude", sorted(self._exclude))
        unknown = [kind for kind in exclude if kind not in p.EVENT_TYPES]
        if unknown:
            raise CommandError(
                f"unknown event type(s) in exclude: {', '.join(unknown)} (known: {', '.join(p.EVENT_TYPES)})"
            )
        self._exclude = set(exclude)
        self._message_update = params.get("messageUpdate", self._message_update)
        self._wire.snapshots = self._message_update == "full"
        return {"exclude": sorted(self._exclude), "messageUpdate": self._message_update}

    def _cmd_shutdown(self, params: dict[str, Any]) -> object:
        self.shutdown_requested.set()
        return NO_DATA


def run_error(exc: BaseException) -> str:
    """One line for a run that raised (the core raises a session error as itself, not wrapped
    in the loop's "event listener failed: ...")."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
