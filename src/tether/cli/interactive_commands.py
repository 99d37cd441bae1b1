"""The slash commands only a terminal has a use for, beside the core's (``tether.session.commands``):
``/copy``, ``/hotkeys``, ``/share``, ``/trust``, ``/settings``, ``/scoped-models``, ``/reload``,
``/import``, ``/login`` and ``/logout``.

``/login`` saves an API key the way pi's does for a key (pi also signs in to some providers
with OAuth in a browser; tether has no OAuth sign-in): typed into a masked field, stored in
``auth.json`` in the data folder with mode 0600 (``tether.ai.auth_file``), never shown, logged
or put in the transcript. ``/import`` stores a pi session file (or a tether export) as a new
session and continues it; pi keeps the file's id, tether gives it a new one as
``tether sessions import`` does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tether.cli import interactive_settings, interactive_views as views, pickers, render, screens
from tether.cli.interactive_settings import SettingsScreen
from tether.session.agent_session import AgentSession

if TYPE_CHECKING:
    from tether.session.settings import Settings

Rebuild = Callable[["str | None", "Settings | None"], AgentSession]
"""What ``/reload`` calls: a core built afresh continuing session ``id`` (``None``: a new one),
with these settings (``None``: read from the files again)."""

FRONT_END_COMMANDS = {
    "copy": "/copy               copy the last answer (OSC 52, and a local clipboard tool if present)",
    "hotkeys": "/hotkeys            the key bindings (keybindings.json in the config folder changes them)",
    "share": "/share              write the session as a standalone HTML page and print its file:// address",
    "trust": "/trust              trust what this project brings (settings, extensions, MCP servers, skills, templates)",
    "settings": "/settings           thinking level, default model, theme, auto-compaction, queue modes",
    "scoped-models": "/scoped-models      choose the models Ctrl-P cycles through (Ctrl-S there saves them)",
    "reload": "/reload             reload extensions, skills, templates, context files, keys and theme",
    "import": "/import FILE        store a pi session file (or a tether export) and continue it",
    "login": "/login [PROVIDER]   save an API key for a provider (auth.json in the data folder, 0600)",
    "logout": "/logout [PROVIDER]  forget the API key /login saved",
}
"""Their ``/help`` lines."""

WAIT_FOR_THE_RUN = frozenset({"settings", "scoped-models", "reload", "import"})
"""Those that change the session or its model: refused while a run or a compaction goes on, as
the core's are."""


class CommandScreen(SettingsScreen, Protocol):
    """The interactive app, as these commands see it."""

    cwd: Path

    def ask_yes_no(self, question: str) -> Awaitable[bool]: ...

    def copy_last_answer(self) -> None: ...

    def hotkeys(self) -> str: ...

    async def reload(self) -> None:
        """``/reload``: the core built again from the files, in the same session."""
        ...


async def run(ui: CommandScreen, core: AgentSession, name: str, args: str) -> None:
    """Run front-end command ``name`` (a key of ``FRONT_END_COMMANDS``) with ``args``."""
    if name in WAIT_FOR_THE_RUN and (core.is_running or core.is_compacting):
        doing = "the agent runs" if core.is_running else "a compaction runs"
        ui.say(render.note(f"/{name} is not available while {doing} (Esc aborts it)", "error"))
        return
    if name == "copy":
        ui.copy_last_answer()
    elif name == "share":
        views.share(ui, core)
    elif name == "trust":
        await views.trust_folder(ui, ui.cwd, ui.ask_yes_no)
    elif name == "settings":
        await interactive_settings.settings_menu(ui, core)
    elif name == "scoped-models":
        await interactive_settings.scoped_models(ui, core)
    elif name == "reload":
        await ui.reload()
    elif name == "import":
        await import_session(ui, core, args)
    elif name == "login":
        await login(ui, args)
    elif name == "logout":
        await logout(ui, args)
    else:
        ui.say(render.note(ui.hotkeys(), ""))


async def import_session(ui: CommandScreen, core: AgentSession, args: str) -> None:
    from tether.cli.session_files import import_session_file
    from tether.store import SessionError

    if not args:
        ui.say(render.note("usage: /import FILE (a pi session .jsonl, or a tether export)", "error"))
        return
    if core.sessions is None:
        ui.say(render.note("/import: this run has no sessions (--no-session)", "error"))
        return
    path = (ui.cwd / os.path.expanduser(args)).resolve()
    problems: list[str] = []
    try:
        record = import_session_file(core.sessions, path, problems)
        await core.before_switch("resume", record.id)
        core.switch_session(record.id)
    except (SessionError, OSError, ValueError) as exc:
        ui.say(render.note(f"/import: {path}: {exc}", "error"))
        return
    for problem in problems:
        ui.say(render.note(f"/import: {problem}", "warning"))
    shown = views.history(core, ui.painter(), ui.rows())
    if shown is not None:
        ui.say(shown)
    ui.say(render.note(f"imported {path} as session {record.id} ({len(core.messages)} messages)", "success"))


def _key_providers() -> list[str]:
    """Providers that take a key (local servers and keyless ``models.json`` providers do not)."""
    from tether.ai.models import list_providers

    return [p.name for p in list_providers() if not p.local and p.api_key_env is not None]


async def _provider(ui: CommandScreen, args: str, names: list[str], what: str) -> str | None:
    if args:
        if args not in names:
            ui.say(render.note(f"{what}: unknown provider {args!r} (known: {', '.join(names)})", "error"))
            return None
        return args
    if not names:
        ui.say(render.note(f"{what}: no provider to choose from", "muted"))
        return None
    async with ui.full_screen():
        index = await pickers.pick_line(
            f"{what}: which provider?", names, start=0, noun="providers", color=ui.color
        )
    return names[index] if index is not None else None


async def login(ui: CommandScreen, args: str) -> None:
    from tether.ai.auth_file import AuthFileError, auth_file, save_key
    from tether.ai.key_names import env_vars_for

    provider = await _provider(ui, args, _key_providers(), "/login")
    if provider is None:
        return
    async with ui.full_screen():
        key = await screens.ask_text(
            f"API key for {provider} (hidden as you type; saved in {auth_file()}, readable by you only)",
            color=ui.color,
            secret=True,
        )
    if key is None or not key.strip():
        ui.say(render.note("login: cancelled, nothing saved", "muted"))
        return
    try:
        written = save_key(provider, key.strip())
    except (AuthFileError, OSError) as exc:
        ui.say(render.item(render.error_text, f"login: {exc}", aborted=False))
        return
    variables = " or ".join(env_vars_for(provider))
    ui.say(
        render.note(
            f"saved an API key for {provider} in {written} (mode 0600); it is used before {variables}",
            "success",
        )
    )


async def logout(ui: CommandScreen, args: str) -> None:
    from tether.ai.auth_file import AuthFileError, remove_key, stored_providers

    # A name given is looked up in the file: one with no saved key is said to have none (it was
    # "unknown provider" then, with the saved ones as the known: none at all after a logout).
    provider = args or await _provider(ui, "", stored_providers(), "/logout")
    if provider is None:
        return
    try:
        removed = remove_key(provider)
    except (AuthFileError, OSError) as exc:
        ui.say(render.item(render.error_text, f"logout: {exc}", aborted=False))
        return
    text = f"forgot the API key saved for {provider}" if removed else f"no API key was saved for {provider}"
    ui.say(render.note(text, "success" if removed else "muted"))


async def reload(
    ui: CommandScreen, old: AgentSession, rebuild: Rebuild, detach: Callable[[], None]
) -> AgentSession | None:
    """``/reload``: settings, extensions, skills, prompt templates and context files read again
    without leaving the session: ``old`` is closed (``detach`` first stops the screen listening)
    and a core built afresh on its session, with its model and thinking level. A settings file
    that became invalid changes nothing (``None``); a core that cannot be built comes back with
    the settings it had."""
    from tether.ai.paths import config_dir
    from tether.errors import TetherError
    from tether.session.settings import load_settings

    if old.session is None:
        ui.say(render.note("/reload: needs a stored session (this run has --no-session)", "error"))
        return None
    try:
        load_settings(config_dir(), ui.cwd)
    except TetherError as exc:
        ui.say(render.item(render.error_text, f"/reload: {exc}; nothing reloaded", aborted=False))
        return None
    session_id = old.session_id if old.messages else None
    model, stream_fn, thinking = old.model, old.agent.stream_fn, old.thinking_level
    detach()
    await old.close()
    try:
        fresh = rebuild(session_id, None)
    except TetherError as exc:
        ui.say(render.item(render.error_text, f"/reload: {exc}; kept the settings", aborted=False))
        fresh = rebuild(session_id, old.settings)
    if (fresh.model["provider"], fresh.model["id"]) != (model["provider"], model["id"]):
        served = any(
            (m["provider"], m["id"]) == (model["provider"], model["id"]) for m in fresh.extension_models()
        )
        with contextlib.suppress(TetherError, LookupError, ValueError):  # an extension's, now gone
            if served:
                fresh.set_model(f"{model['provider']}/{model['id']}")
            else:
                fresh.set_model(model, stream_fn)
    fresh.set_thinking(thinking)
    resources = fresh.resources
    host = resources.extensions if resources is not None else None
    counts = (
        f"{len(host.extensions) if host is not None else 0} extensions, "
        f"{len(resources.skills) if resources is not None else 0} skills, "
        f"{len(resources.templates) if resources is not None else 0} prompt templates"
    )
    ui.say(render.note(f"reloaded: {counts}, context files, keybindings and theme", "success"))
    if fresh.notice:
        ui.say(render.note(fresh.notice, "warning"))
    return fresh
