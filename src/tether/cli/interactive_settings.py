"""``/settings`` and ``/scoped-models``: pi's settings menu and scoped-model selector.

Each change applies to the running session at once and is saved to the user's ``settings.json``
(``save_user_setting``: the file is checked as a start-up would read it before it is replaced),
so the next start begins where this one left off, as pi's ``/settings`` does. A change that
cannot be saved still applies, and one line says why it was not saved.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol, cast

from tether.agent import QueueMode
from tether.cli import pickers, render, screens, themes
from tether.cli.interactive_views import Screen
from tether.session.agent_session import AgentSession
from tether.session.settings import QUEUE_MODES, THINKING_LEVELS


class SettingsScreen(Screen, Protocol):
    """The interactive app, as ``/settings`` sees it: a ``Screen`` whose theme can change."""

    def set_theme(self, theme: themes.Theme) -> None: ...

    def theme_name(self) -> str: ...


def _save(ui: Screen, key: str, value: object) -> None:
    from tether.ai.paths import config_dir
    from tether.session.settings import SettingsError, save_user_setting

    try:
        written = save_user_setting(config_dir(), key, value)
    except (OSError, SettingsError) as exc:
        ui.say(render.note(f"applied, not saved: {exc}", "error"))
    else:
        ui.say(render.note(f"{key}: {value} (saved in {written})", "muted"))


def _rows(core: AgentSession, theme: str) -> list[tuple[str, str]]:
    """(label, value) of each setting the menu shows."""
    model = core.model
    return [
        ("Thinking level", str(core.thinking_level)),
        ("Default model", f"{model['provider']}/{model['id']}"),
        ("Theme", theme),
        ("Auto-compaction", "on" if core.settings.compaction.enabled else "off"),
        ("Steering mode", core.agent.steering_mode),
        ("Follow-up mode", core.agent.follow_up_mode),
    ]


async def settings_menu(ui: SettingsScreen, core: AgentSession) -> None:
    """``/settings``: the menu, then the choices for the row picked, until Esc."""
    from tether.ai.paths import config_dir

    cursor = 0
    async with ui.full_screen():
        while True:
            rows = _rows(core, ui.theme_name())
            width = max(len(label) for label, _ in rows)
            index = await screens.pick_option(
                "Settings (saved to your settings.json)",
                [f"{label.ljust(width)}  {value}" for label, value in rows],
                color=ui.color,
                start=cursor,
            )
            if index is None:
                return
            cursor = index
            label, current = rows[index]
            if label == "Thinking level":
                level = await _choose(ui, label, list(THINKING_LEVELS), current)
                if level is not None:
                    _save(ui, "thinking", level)
                    core.set_thinking(level)
            elif label == "Default model":
                models = await core.model_candidates()
                names = [f"{m['provider']}/{m['id']}" for m in models]
                chosen = await _choose(ui, label, names, current)
                if chosen is not None:
                    core.set_model(models[names.index(chosen)])
                    _save(ui, "model", chosen)
            elif label == "Theme":
                name = await _choose(ui, label, themes.available(config_dir()), current)
                if name is not None:
                    theme, warning = themes.load_theme(name, config_dir())
                    if warning is not None:
                        ui.say(render.note(warning, "warning"))
                    else:
                        ui.set_theme(theme)
                        _save(ui, "theme", name)
            elif label == "Auto-compaction":
                on = await _choose(ui, label, ["on", "off"], current)
                if on is not None:
                    compaction = replace(core.settings.compaction, enabled=on == "on")
                    core.settings = replace(core.settings, compaction=compaction)
                    _save(ui, "compaction.enabled", on == "on")
            else:
                mode = await _choose(ui, label, list(QUEUE_MODES), current)
                if mode is not None:
                    if label == "Steering mode":
                        core.agent.steering_mode = cast(QueueMode, mode)
                        _save(ui, "steeringMode", mode)
                    else:
                        core.agent.follow_up_mode = cast(QueueMode, mode)
                        _save(ui, "followUpMode", mode)


async def _choose(ui: Screen, title: str, options: list[str], current: str) -> str | None:
    start = options.index(current) if current in options else 0
    marked = [f"{o}  ← current" if o == current else o for o in options]
    index = await screens.pick_option(title, marked, color=ui.color, start=start)
    return options[index] if index is not None else None


async def scoped_models(ui: Screen, core: AgentSession) -> None:
    """``/scoped-models``: tick the models Ctrl-P cycles through; Esc keeps the choice for this
    session, Ctrl-S saves it as ``enabledModels`` too. None ticked: every usable model."""
    from tether.session.model_choice import ScopedModel

    models = await core.available_models()
    names = [f"{m['provider']}/{m['id']}" for m in models]
    scoped = [f"{s.model['provider']}/{s.model['id']}" for s in core.scoped_models]
    async with ui.full_screen():
        result = await pickers.pick_many(
            "Models Ctrl-P cycles through (none ticked: every usable model)",
            names,
            [names.index(n) for n in scoped if n in names],
            color=ui.color,
        )
    if result is None:
        ui.say(render.note("scoped models: cancelled, nothing changed", "muted"))
        return
    ticked, save = result
    core.scoped_models = [ScopedModel(models[i]) for i in ticked]
    shown = ", ".join(names[i] for i in ticked) or "every usable model"
    ui.say(render.note(f"Ctrl-P cycles through: {shown}", "success"))
    if save:
        _save(ui, "enabledModels", [names[i] for i in ticked])
