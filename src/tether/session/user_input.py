"""The coding agent's input syntax, as an ``AgentSession`` runs it: ``submit()`` and the user's
own shell commands (``execute_bash()``).

A part of ``AgentSession`` (see ``tether.session.core_state``), opt-in: ``prompt()`` sends text
as it is, while ``submit()`` reads a line as the coding agent's editor means it: ``!cmd``/``$code``
run for the user, ``@path`` attaches files, ``/name`` runs an extension's command, a skill or a
template, ``/mcp__server__prompt`` an MCP server's prompt. Each becomes one run of the session's
(so abort, queues and ``agent_settled`` behave as for a prompt); the run's life itself stays in
``tether.session.agent_session``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from tether.ai.abort import AbortController
from tether.errors import ToolError
from tether.session.core_state import CoreState
from tether.wire import AgentMessage, BashExecutionMessage, ImageContent

if TYPE_CHECKING:
    from tether.session.events import Run
    from tether.session.extensions.api import ExtensionCommand
    from tether.session.extensions.context import SessionControl
    from tether.session.extensions.host import ExtensionHost
    from tether.session.settings import Retry as RetrySettings


class UserInput(CoreState):
    """``submit()`` and ``execute_bash()`` of ``AgentSession``."""

    _deferred: list[AgentMessage]
    """User shell commands' records made while the agent ran: recorded when the run settles."""
    _input_abort: AbortController | None
    _bash_aborts: set[AbortController]
    """What aborts each user shell command under way: a client may run several at once."""

    if TYPE_CHECKING:  # the run's life, ``AgentSession``'s own

        def _new_run(
            self, body: Callable[[], Awaitable[list[AgentMessage]]], retry: RetrySettings | None = None
        ) -> Run: ...

        async def _prompt_run(self, messages: list[AgentMessage]) -> list[AgentMessage]: ...

        async def _install_mcp_tools(self) -> bool: ...

    def submit(self, line: str, images: Sequence[ImageContent] = (), *, shell: bool = True) -> Run:
        """The coding agent's input syntax, then a prompt.

        ``!cmd``/``!!cmd`` run a shell command and ``$code``/``$$code`` Python (with ``shell``);
        the result joins the conversation, or with a doubled marker is recorded for the user only.
        Otherwise ``@path`` mentions are attached as a file message before the prompt.
        """
        host = self.resources.extensions if self.resources is not None else None
        if host is not None and host.has_input_hooks():
            return self._new_run(lambda: self._hooked_input(host, line, images, shell))
        return self._new_run(self._submitted(line, images, shell))

    def _submitted(
        self, line: str, images: Sequence[ImageContent], shell: bool
    ) -> Callable[[], Awaitable[list[AgentMessage]]]:
        """The run ``submit`` makes of a line."""
        if self.mcp and line.startswith("/mcp__"):
            return lambda: self._mcp_prompt_run(line, images)
        if self.resources is not None and line.startswith("/"):
            command = self.resources.extension_command(line)
            if command is not None:
                return lambda: self._command_run(*command)
            try:
                line = self.resources.expand(line) or line
            except ValueError as exc:  # a skill whose file went away since the start
                problem = str(exc)
                return lambda: self._notice_run(problem)
        messages: list[AgentMessage] = []
        # The syntax's module loads only for a line that may use it (a plain prompt would pay 1.4%
        # of a `tether -p` start-up for it): a `!` or `$` first, an `@` anywhere.
        if (shell and line.startswith(("!", "$"))) or "@" in line:
            from tether.tools.prompt_input import file_mentions_message, parse_prompt_input

            parsed = parse_prompt_input(line) if shell else None
            if parsed is not None:
                return lambda: self._input_run(parsed)
            workspace = self.approval.workspace if self.approval is not None else None
            mention = file_mentions_message(line, self.cwd, workspace)
            if mention is not None:
                messages.extend(self._vouch([mention]))
        messages.extend(self._inputs(line, images))
        return lambda: self._prompt_run(messages)

    async def _hooked_input(
        self, host: ExtensionHost, line: str, images: Sequence[ImageContent], shell: bool
    ) -> list[AgentMessage]:
        """The extensions' ``input`` hooks first (pi's order: before skills and templates
        expand); then the line they left, as ``submit`` runs it, inside this same run."""
        text = await host.input(line, "interactive" if getattr(host.ui, "ui_mode", "") == "tui" else "rpc")
        if text is None:
            return self._added
        return await self._submitted(text, images, shell)()

    async def execute_bash(
        self,
        command: str,
        *,
        exclude_from_context: bool = False,
        on_output: Callable[[str], None] | None = None,
    ) -> BashExecutionMessage:
        """Run a shell command for the user and record it for the model's next call (unless
        ``exclude_from_context``: recorded, never sent). ``on_output`` gets the output as it comes.

        While the agent runs, the record joins the conversation when the run settles, so it never
        lands between a tool call and its result.
        """
        from tether.tools.prompt_input import run_shell_input

        controller = AbortController()
        self._bash_aborts.add(controller)
        try:
            message = await run_shell_input(
                command,
                cwd=self.cwd,
                sandbox=self.confinement(),
                exclude_from_context=exclude_from_context,
                signal=controller.signal,
                on_output=on_output,
                env_passthrough=self.settings.shell_env_passthrough,
            )
        finally:
            self._bash_aborts.discard(controller)
        if self.is_running:
            self._deferred.append(message)
        else:
            self._record(message)
        return message

    def abort_bash(self) -> None:
        """Abort every user shell command under way, not only the last begun: a client may run
        several at once (RPC's ``bash`` while another runs), and ``abort_bash``, or closing
        stdin, must reach each."""
        for controller in tuple(self._bash_aborts):
            controller.abort()

    async def _mcp_prompt_run(self, line: str, images: Sequence[ImageContent]) -> list[AgentMessage]:
        """``/mcp__server__prompt args`` (``tether.mcp.prompts``): the server's prompt becomes the
        user's message; a prompt that cannot be had is a notice, not a run."""
        if not await self._install_mcp_tools() or not self.mcp:
            return self._added
        try:
            content = await self.mcp.run_prompt(line)
        except ToolError as exc:
            self.notify(str(exc))
            return self._added
        message: AgentMessage = {
            "role": "user",
            "content": [*content, *images],
            "timestamp": int(time.time() * 1000),
        }
        return await self._prompt_run(self._inputs(message, ()))

    async def _command_run(self, command: ExtensionCommand, args: str) -> list[AgentMessage]:
        """An extension's slash command, as a run: it may prompt the agent through ``ctx.send``."""
        host = self.resources.extensions if self.resources is not None else None
        assert host is not None

        async def send(text: str) -> None:
            await self._prompt_run(self._inputs(text, ()))

        core = cast("SessionControl", self)  # the command's context is the whole session
        text = await host.run_command(command, args, host.command_context(core, send))
        if text:
            self.notify(text, command=command.name)
        return self._added

    async def _notice_run(self, text: str) -> list[AgentMessage]:
        """A run that only tells the user something (a slash command that could not run)."""
        self.notify(text)
        return self._added

    async def _input_run(self, parsed: Any) -> list[AgentMessage]:
        from tether.tools.prompt_input import ShellInput, run_python_input, run_shell_input

        controller = AbortController()
        if self._aborted:
            controller.abort()
        self._input_abort = controller
        try:
            if isinstance(parsed, ShellInput):
                message: AgentMessage = await run_shell_input(
                    parsed.command,
                    cwd=self.cwd,
                    sandbox=self.confinement(),
                    exclude_from_context=parsed.exclude_from_context,
                    signal=controller.signal,
                    env_passthrough=self.settings.shell_env_passthrough,
                )
            else:
                message = await run_python_input(
                    parsed.code,
                    cwd=self.cwd,
                    sandbox=self.confinement(),
                    exclude_from_context=parsed.exclude_from_context,
                    signal=controller.signal,
                    env_passthrough=self.settings.shell_env_passthrough,
                )
        finally:
            self._input_abort = None
        await self._emit({"type": "message_start", "message": message})
        self._record(message)
        await self._emit({"type": "message_end", "message": message})
        return self._added
