"""What the interactive mode's keys and terminal-only commands open: the transcript (Ctrl-O), the
tree navigator (``/tree``), the model picker (Ctrl-L), the session picker (``/resume``), the
external editor (Ctrl-G) and the clipboard (``/copy``).

Each is a function of the core and of a ``Screen``, the few things of the interactive app it
needs (print above the input box, suspend the live area for a full-screen view); the views
themselves are in ``screens`` and ``pickers``, the operations on the core.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from prompt_toolkit.application import in_terminal
from prompt_toolkit.output import Output

from tether.ai.abort import AbortController
from tether.cli import clipboard, external_editor, pickers, render, screens, themes
from tether.cli.keybindings import Bindings
from tether.cli.transcript import (
    BackwardTranscript,
    branch_messages_backward,
    draw_transcript,
    render_transcript,
    transcript_items,
)
from tether.own_files import make_own_folder
from tether.session import Session
from tether.session.agent_session import AgentSession
from tether.session.events import message_text
from tether.session.stats import SessionRow
from tether.session.tree_view import BranchChoice, TreeRow, TreeSource, branch_choice, leaves_something
from tether.store import SessionError
from tether.wire import AgentMessage

SUMMARY_OPTIONS = ["No summary", "Summarise the branch", "Summarise with custom instructions"]


class Screen(Protocol):
    """The interactive app, as the views see it."""

    color: bool
    show_thinking: bool
    """Thinking shown in full (else folded to a line); Ctrl-T toggles it, in the views too."""

    def say(self, item: render.Item) -> None:
        """Print ``item`` above the input box (held back while a full-screen view is up), kept to
        be drawn again at a new width."""
        ...

    def painter(self) -> render.Painter: ...

    def rows(self) -> int:
        """The terminal's height."""
        ...

    def bindings(self) -> Bindings:
        """The keys in use (``keybindings.json`` applied)."""
        ...

    def full_screen(self) -> AbstractAsyncContextManager[None]:
        """Suspend the live area while a full-screen view runs."""
        ...

    def copy(self, text: str) -> str:
        """Put ``text`` on the clipboard (OSC 52 to the terminal, and a local clipboard tool if
        any); where it went, for a message."""
        ...


def transcript_pages(
    core: AgentSession, live: AgentMessage | None, *, color: bool, theme: themes.Theme = themes.DARK
) -> Callable[[int, bool], Callable[[], str | None]]:
    """For ``screens.show_transcript``: the branch newest first (``live``, the answer streaming
    now, on top), read from the session lazily and rendered a chunk at a time."""

    def make_pages(width: int, thinking: bool) -> Callable[[], str | None]:
        session = core.session
        newest: Iterable[dict[str, Any]] = (
            branch_messages_backward(session)
            if session is not None
            else reversed([cast(dict[str, Any], m) for m in core.messages])
        )
        if live is not None:
            newest = itertools.chain([cast(dict[str, Any], live)], newest)
        painter = render.Painter(width, color, theme)
        return BackwardTranscript(painter, newest, show_thinking=thinking, custom=custom_renderer(core)).older

    return make_pages


def custom_renderer(core: AgentSession | None) -> render.CustomRenderer | None:
    """How the extensions render their messages (``api.register_message_renderer``), if any."""
    host = core.resources.extensions if core is not None and core.resources is not None else None
    return host.render_message if host is not None else None


def header(core: AgentSession, painter: render.Painter, rows: int, warning: str | None) -> list[render.Item]:
    """What is printed at start: what runs where, notices, a ``keybindings.json`` warning, and
    for a resumed session the end of its conversation (``history``)."""
    model = core.model
    session = core.session_id or "not saved"
    out = [
        render.note(
            f"tether · {model['provider']}/{model['id']} · session {session} · /help for commands", "muted"
        )
    ]
    out += [render.note(note, "warning") for note in (core.notice, warning) if note]
    if core.messages:
        shown = history(core, painter, rows)
        out += [shown] if shown is not None else []
        out.append(render.note(f"resumed: {len(core.messages)} messages", "muted"))
    return out


HISTORY_SCREENS = 2
"""Screens of the conversation drawn on resume; Ctrl-O (the transcript) reads everything."""
EARLIER_MESSAGES = "── earlier messages above this point: Ctrl-O (the transcript) shows them ──"


def history(core: AgentSession, painter: render.Painter, rows: int) -> render.Item | None:
    """The end of the branch as the scrollback would have shown it, for a resumed session: read
    newest first and rendered a chunk at a time until ``HISTORY_SCREENS`` screens are filled, so
    resuming a 10,000-message session costs what resuming a 40-message one does. At another
    width what they show is drawn again (``transcript_items``: not the whole messages, which the
    scrollback kept after /new or /resume dropped them). ``None`` when the conversation is empty."""
    session = core.session
    newest: Iterable[dict[str, Any]] = (
        branch_messages_backward(session)
        if session is not None
        else reversed([cast(dict[str, Any], m) for m in core.messages])
    )
    read: list[dict[str, Any]] = []
    custom = custom_renderer(core)
    pages = BackwardTranscript(painter, _kept(newest, read), show_thinking=False, folded=True, custom=custom)
    chunks: list[str] = []
    lines = 0
    while lines < HISTORY_SCREENS * rows and not pages.exhausted:
        text = pages.older()
        if text is None:
            break
        chunks.insert(0, text)
        lines += text.count("\n") + 2
    if not chunks or (pages.exhausted and chunks == [render_empty(painter)]):
        return None
    first, earlier = "\n\n".join(chunks), not pages.exhausted
    items = transcript_items(read[::-1], show_thinking=False, folded=True, custom=custom)  # not the messages

    def drawn(at: render.Painter) -> str:
        body = first if at == painter else draw_transcript(at, items)
        return at.styled(EARLIER_MESSAGES, "muted") + "\n\n" + body if earlier else body

    return drawn


def _kept(messages: Iterable[dict[str, Any]], into: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``messages``, each added to ``into`` as it is read."""
    for message in messages:
        into.append(message)
        yield message


def render_empty(painter: render.Painter) -> str:
    return render_transcript(painter, [], show_thinking=False)


async def show_transcript(ui: Screen, core: AgentSession, live: AgentMessage | None) -> None:
    """Ctrl-O: the branch from its end, rendered as it scrolls. Ctrl-T there changes
    ``ui.show_thinking`` before the live area is drawn again."""
    make_pages = transcript_pages(core, live, color=ui.color, theme=ui.painter().theme)
    async with ui.full_screen():
        ui.show_thinking = await screens.show_transcript(
            make_pages, show_thinking=ui.show_thinking, color=ui.color
        )


async def pick_model(ui: Screen, core: AgentSession) -> None:
    """Ctrl-L: choose among ``core.model_candidates()``, filtered as you type; Ctrl-S there
    also saves the choice as the default model in the user's ``settings.json``."""
    models = await core.model_candidates()
    async with ui.full_screen():
        chosen = await pickers.pick_model(models, core.model, color=ui.color)
    if chosen is not None:
        model = core.set_model(chosen[0])
        text = f"model: {model['provider']}/{model['id']}, thinking {core.thinking_level}"
        ui.say(render.note(text, "muted"))
        if chosen[1]:
            from tether.ai.paths import config_dir
            from tether.session.settings import SettingsError, save_user_setting

            try:
                written = save_user_setting(config_dir(), "model", f"{model['provider']}/{model['id']}")
            except (OSError, SettingsError) as exc:
                ui.say(render.note(f"not saved as the default: {exc}", "error"))
            else:
                ui.say(render.note(f"saved as the default model in {written}", "success"))


async def resume_picked(ui: Screen, core: AgentSession) -> None:
    """``/resume`` alone: the session picker (search, sort, rename, delete), then switch."""
    if core.sessions is None:
        ui.say(render.note("/resume: this run has no sessions (--no-session)", "error"))
        return
    actions = pickers.SessionActions(
        rows=lambda: [SessionRow.of(r) for r in core.list_sessions()],
        rename=core.rename_session,
        delete=core.delete_session,
    )
    async with ui.full_screen():
        chosen = await pickers.pick_session(actions, current=core.session_id, color=ui.color)
    if chosen is None:
        ui.say(render.note("resume: cancelled", "muted"))
    elif chosen == core.session_id:
        ui.say(render.note("resume: already in that session", "muted"))
    else:
        try:
            await core.before_switch("resume", chosen)
        except SessionError as exc:  # an extension's session_before_switch cancelled it
            ui.say(render.note(f"resume: {exc}", "warning"))
            return
        core.switch_session(chosen)
        shown = history(core, ui.painter(), ui.rows())
        if shown is not None:
            ui.say(shown)
        ui.say(render.note(f"resumed session {chosen} ({len(core.messages)} messages)", "success"))


async def fork_picked(ui: Screen, core: AgentSession) -> str | None:
    """``/fork`` alone, as pi's: pick one of your messages of this branch; a new session holds
    the conversation before it, and its text comes back into the input box to edit and send.
    Returns that text (``None``: cancelled). ``/clone`` copies everything at once instead."""
    session = core.session
    if session is None:
        ui.say(render.note("/fork: this run has no session (--no-session)", "error"))
        return None
    prompts = [
        (node.entry, text)
        for node in session.path_nodes()
        if node.type == "message"
        and (message := node.entry.get("message")) is not None
        and message.get("role") == "user"
        and (text := render.message_text(message)).strip()
    ]
    if not prompts:
        ui.say(render.note("/fork: no message of yours to fork from yet", "muted"))
        return None
    labels = [" ".join(text.split())[:200] for _, text in prompts]
    async with ui.full_screen():
        index = await pickers.pick_line(
            "Fork from which message? (the new session starts just before it)",
            labels,
            start=len(labels) - 1,
            noun="messages",
            color=ui.color,
        )
    if index is None:
        ui.say(render.note("fork: cancelled", "muted"))
        return None
    entry, text = prompts[index]
    try:
        await core.before_fork(entry["id"], "before")
    except SessionError as exc:  # an extension's session_before_fork cancelled it
        ui.say(render.note(f"fork: {exc}", "warning"))
        return None
    parent = entry.get("parentId")
    new_id = (
        core.fork(parent) if isinstance(parent, str) else core.new_session(parent_session=core.session_id)
    )
    ui.say(render.note(f"forked into new session {new_id}: edit the message below and send", "success"))
    return text


def share(ui: Screen, core: AgentSession) -> None:
    """``/share``: pi uploads the session to a gist; tether writes the same standalone HTML page
    as ``/export FILE.html`` into the data folder and prints its ``file://`` address, so nothing
    leaves the machine unless the user sends the file."""
    from tether.ai.paths import data_dir

    if core.session is None:
        ui.say(render.note("/share: this run has no session (--no-session)", "error"))
        return
    target = data_dir() / "shares" / f"{core.session.id}.html"
    make_own_folder(target.parent)
    written = core.export(target)
    ui.say(
        render.note(f"shared as {written.resolve().as_uri()} (a local file: send it as you like)", "success")
    )


async def trust_folder(ui: Screen, folder: Path, ask: Callable[[str], Awaitable[bool]]) -> None:
    """``/trust``: grant what the project brings and was not granted (an answer "no" at start-up
    included), after a question naming every item; it applies from the next start, when the
    project's settings, extensions, servers, skills and templates are read."""
    from tether.ai.paths import config_dir
    from tether.cli.trust_prompt import describe, offered
    from tether.session.settings import load_settings
    from tether.session.trust import trust

    offers = offered(folder, load_settings(config_dir(), folder), config_dir())
    if not offers:
        ui.say(render.note(f"{folder}: nothing here waits for trust", "muted"))
        return
    if not await ask(f"{describe(offers)}\nTrust all of the above for every run started here?"):
        ui.say(render.note("trust: not changed", "muted"))
        return
    written = [trust(config_dir(), where, [kind], {kind: names}) for where, kind, names in offers]
    ui.say(render.note(f"trusted (recorded in {written[-1]}); it applies from the next start", "success"))


async def edit_externally(ui: Screen, text: str) -> str | None:
    """Ctrl-G: ``text`` after the user's editor, or ``None`` (said why) when it gave nothing back."""
    try:
        command = external_editor.editor_command()
        async with in_terminal():
            return await asyncio.get_running_loop().run_in_executor(None, external_editor.edit, text, command)
    except external_editor.EditorError as exc:
        ui.say(render.note(f"editor: {exc}", "error"))
        return None


def copy(text: str, output: Output | None) -> str:
    """``text`` to the terminal's clipboard (OSC 52, written straight to the terminal: it shows
    nothing and moves no cursor) and to a local clipboard tool if any; where it went."""
    if output is not None:
        output.write_raw(clipboard.osc52(text))
        output.flush()
    tool = clipboard.copy_locally(text)
    return f"the terminal (OSC 52) and {tool}" if tool else "the terminal (OSC 52)"


def copy_last_answer(ui: Screen, core: AgentSession) -> None:
    """``/copy``: the last answer's text to the clipboard."""
    answer = core.last_assistant()
    text = message_text(answer) if answer is not None else ""
    if not text.strip():
        ui.say(render.note("/copy: no answer to copy yet", "error"))
        return
    where = ui.copy(text)
    ui.say(render.note(f"copied the last answer ({len(text)} characters) to {where}", "muted"))


@dataclass(frozen=True, slots=True)
class _TreeMove:
    """What the navigator decided: where to go, and whether to summarise the branch left."""

    row: TreeRow
    choice: BranchChoice
    summarize: bool = False
    instructions: str | None = None


async def navigate_tree(ui: Screen, core: AgentSession, abort: AbortController) -> str | None:
    """``/tree``: pick an entry in the navigator, maybe summarise the branch left (``abort``
    stops that), move there. Returns the prompt to put back in the input box, if one was picked."""
    session = core.session
    if session is None:
        ui.say(render.note("/tree: this run has no session (--no-session)", "error"))
        return None
    move = await _pick_move(ui, session)
    if move is None:
        return None
    if move.summarize:
        ui.say(render.note("summarising the branch you left… (Esc to stop)", "muted"))
    try:
        summary = await core.branch(
            move.choice.target, summarize=move.summarize, instructions=move.instructions, signal=abort.signal
        )
    except SessionError as exc:  # the summariser failed or was stopped: the leaf did not move
        ui.say(render.item(render.error_text, f"{exc}; still where you were", aborted=False))
        return None
    editor_text = move.choice.editor_text
    if editor_text is None:
        ui.say(render.note(f"branched: now at {move.row.text}", "success"))
    else:
        ui.say(render.note("branched: back before that prompt; edit it below and send", "success"))
    if summary:
        ui.say(
            lambda painter: (
                painter.styled("summary of the branch left:", "muted") + "\n" + painter.markdown(summary)
            )
        )
    return editor_text


async def _edit_label(ui: Screen, session: Session, row: TreeRow) -> bool:
    """Shift-L in ``/tree``: ask for ``row``'s label (empty: remove it) and store it as pi does,
    a ``label`` entry naming its target. Whether a label entry was written."""
    text = await screens.ask_text(
        f"Label for: {row.text[:70]} (empty removes it)", color=ui.color, default=row.label or ""
    )
    if text is None or text.strip() == (row.label or ""):
        return False
    try:
        session.label(row.id, text.strip() or None)
    except SessionError as exc:
        ui.say(render.note(f"label not saved: {exc}", "error"))
        return False
    return True


async def _pick_move(ui: Screen, session: Session) -> _TreeMove | None:
    """The full-screen part of ``/tree``: the navigator, then (when the move leaves conversation
    behind) the summary question. Esc on the question returns to the tree; Esc on the tree ends
    with nothing changed (``None``)."""
    source = TreeSource.of(session)
    if not source.entries:
        ui.say(render.note("(the session is empty)", "muted"))
        return None
    start: str | None = None
    search = ""
    mode = "default"  # pi's treeFilterMode default
    async with ui.full_screen():
        while True:
            row = await screens.pick_tree_row(
                source,
                start=start,
                search=search,
                mode=mode,
                color=ui.color,
                bindings=ui.bindings(),
                copy=lambda text: f"copied {len(text)} characters to {ui.copy(text)}",
            )
            search = ""
            if isinstance(row, screens.EditLabel):
                start, search, mode = row.row.id, row.search, row.mode
                if await _edit_label(ui, session, row.row):
                    source = TreeSource.of(session)
                continue
            if row is None:
                ui.say(render.note("tree: cancelled, nothing changed", "muted"))
                return None
            start = row.id
            choice = branch_choice(row)
            if row.current and choice.editor_text is None:
                ui.say(render.note("tree: already there, nothing changed", "muted"))
                return None
            target_path = session.path(choice.target) if choice.target is not None else []
            if not leaves_something(session.path(), target_path):
                return _TreeMove(row, choice)
            answer = await screens.pick_option(
                "Summarise the branch you are leaving?", SUMMARY_OPTIONS, color=ui.color
            )
            if answer == 2:
                instructions = await screens.ask_text("Instructions for the summary", color=ui.color)
                if instructions is not None:
                    return _TreeMove(row, choice, summarize=True, instructions=instructions.strip() or None)
            elif answer is not None:
                return _TreeMove(row, choice, summarize=answer == 1)
