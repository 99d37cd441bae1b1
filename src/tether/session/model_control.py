"""Switching model and thinking level: ``/model``, Ctrl-P, Shift-Tab, and what the pickers list.

A part of ``AgentSession`` (see ``tether.session.core_state``): every switch clamps the thinking
level to what the model accepts, is recorded in the session as a settings entry, and says
``thinking_level_changed`` when the level moved. Models come from the registry, from local
servers that answer, and from extensions (``register_provider``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from tether.ai.types import StreamFn, ThinkingLevel
from tether.session.core_state import CoreState
from tether.wire import ModelInfo

if TYPE_CHECKING:
    from tether.session.model_choice import Direction, ModelCycle


class ModelControl(CoreState):
    """The model and thinking-level half of ``AgentSession``'s settings."""

    def set_model(
        self, spec: str | ModelInfo, stream_fn: StreamFn | None = None, *, source: str = "set"
    ) -> ModelInfo:
        """Switch model (a ``provider/id`` spec, or a model with its stream function); the thinking
        level is clamped to what the new model accepts. Recorded in the session; extensions see
        ``model_select`` (``source``: ``set``, or ``cycle`` from ``cycle_model``)."""
        level = self.agent.thinking_level
        host = self.resources.extensions if self.resources is not None else None
        served = host.model(spec) if host is not None and isinstance(spec, str) else None
        if served is not None:
            model, stream_fn = served
        elif isinstance(spec, str):
            from tether.session.model_choice import resolve_model

            resolved = resolve_model(spec, None)
            model, stream_fn = resolved.model, resolved.stream_fn
            level = resolved.thinking or level  # `/model opus:high`
        else:
            model = spec
        before, previous = self.agent.thinking_level, self.agent.model
        self.agent.model = model
        self.agent.stream_fn = stream_fn
        self.agent.thinking_level = _clamp_thinking(model, level)
        self.record_settings()
        if host is not None:
            host.observe(
                {"type": "model_select", "model": model, "previous_model": previous, "source": source}
            )
        self._thinking_changed(before)
        return model

    async def cycle_model(self, direction: Direction = "forward") -> ModelCycle | None:
        """Switch to the next model (pi's Ctrl-P): of ``scoped_models`` (``--models``) with the
        level its pattern named, else of every usable model (``tether models``). ``None`` when
        there is nothing to switch to."""
        from tether.session.model_choice import ModelCycle, next_model

        scoped = self.scoped_models
        if scoped:
            models = [s.model for s in scoped]
        else:
            from tether.ai.local_servers import usable_models

            models = _distinct([*await usable_models(), *self.extension_models()])
        index = next_model(models, self.agent.model, direction)
        if index is None:
            return None
        chosen = models[index]
        served = any(_same_model(chosen, m) for m in self.extension_models())
        self.set_model(f"{chosen['provider']}/{chosen['id']}" if served else chosen, source="cycle")
        level = scoped[index].thinking if scoped else None
        if level is not None:
            self.set_thinking(level)
        return ModelCycle(self.model, self.thinking_level, is_scoped=bool(scoped))

    def cycle_thinking_level(self) -> str | None:
        """Switch to the next thinking level the model accepts (pi's Shift-Tab), wrapping
        around; ``None`` for a model without reasoning."""
        from tether.session.model_choice import next_thinking_level

        model = self.agent.model
        level = next_thinking_level(model, self.thinking_level) if model is not None else None
        return self.set_thinking(level) if level is not None else None

    def set_thinking(self, level: str, *, record: bool = True) -> str:
        """Set the thinking level, clamped to the model; returns the level in effect. Without a
        model (yet) the level is kept as asked: ``set_model`` clamps it to the model chosen.
        ``record=False``: the session records the settings with its next turn instead (how a
        resumed conversation starts: as in pi, opening one writes nothing to it)."""
        before = self.agent.thinking_level
        model = self.agent.model
        self.agent.thinking_level = (
            _clamp_thinking(model, level) if model is not None else cast(ThinkingLevel, level)
        )
        if record:
            self.record_settings()
        self._thinking_changed(before)
        return self.agent.thinking_level

    def _thinking_changed(self, before: str) -> None:
        level = self.agent.thinking_level
        if level != before:
            self._emit_now({"type": "thinking_level_changed", "level": level})

    def extension_models(self) -> list[ModelInfo]:
        """The models extensions serve (``register_provider``): usable whatever keys are set."""
        host = self.resources.extensions if self.resources is not None else None
        if host is None:
            return []
        return [model for provider in host.providers().values() for model in provider.models]

    async def available_models(self) -> list[ModelInfo]:
        """Every model a request can go to now, once each: the current one, those of providers
        with a key or of local servers that answer (``tether models``), those extensions serve."""
        from tether.ai.local_servers import usable_models

        current = [self.agent.model] if self.agent.model is not None else []
        return _distinct([*current, *await usable_models(), *self.extension_models()])

    async def model_candidates(self) -> list[ModelInfo]:
        """What the model picker lists: ``scoped_models`` (``--models``), else every usable
        model; the current one always among them."""
        from tether.session.model_choice import model_candidates

        return await model_candidates([s.model for s in self.scoped_models], self.agent.model)


def _same_model(a: ModelInfo, b: ModelInfo) -> bool:
    return (a["provider"], a["id"]) == (b["provider"], b["id"])


def _distinct(models: Sequence[ModelInfo]) -> list[ModelInfo]:
    """``models`` without repeats (same provider and id), first occurrence kept."""
    kept: list[ModelInfo] = []
    for model in models:
        if not any(_same_model(model, k) for k in kept):
            kept.append(model)
    return kept


def _clamp_thinking(model: ModelInfo, level: str) -> ThinkingLevel:
    from tether.ai.thinking import clamp_thinking_level

    return clamp_thinking_level(model, cast(Any, level))
