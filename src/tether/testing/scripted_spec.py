"""The scripted model as a model-spec provider: ``--model scripted:/path/to/script.json``, or
``scripted/NAME`` (and no ``--model`` at all) with the script in ``TETHER_SCRIPTED``.

Registered through the ``tether.model_specs`` entry point of tether's own package, as any
installed provider would be (``tether.session.model_choice.register_model_spec``): the session
layer resolves model specs without knowing this test double, which sits above it.

The file is a list of responses in the conformance scenario format, or an object with a
``responses`` list (a whole scenario file works too). Each resolution plays the script from its
start (a ``ScriptedModel`` of its own).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, cast

from tether.errors import ModelError
from tether.session.model_choice import SCRIPTED_ENV, ResolvedModel
from tether.testing.scripted import SCRIPTED_MODEL, ScriptedModel, ScriptedResponse
from tether.wire import ModelInfo


def resolve(spec: str) -> ResolvedModel:
    """The scripted model ``spec`` names: ``scripted:PATH``, or ``scripted``/``scripted/NAME``
    with the script in ``TETHER_SCRIPTED``."""
    if spec.startswith("scripted:"):
        return load_script(Path(spec.removeprefix("scripted:")), "scripted model")
    script = os.environ.get(SCRIPTED_ENV)
    if not script:
        raise ModelError(f"model {spec!r} needs {SCRIPTED_ENV}=path/to/script.json")
    return load_script(Path(script), SCRIPTED_ENV)


def load_script(path: Path, source: str) -> ResolvedModel:
    """The scripted model playing the responses of the JSON script file ``path``; a file that
    cannot be read or is not a script is a ``ModelError`` naming the file and what is wrong, after
    ``source``, where the path came from (a ``scripted:`` spec or ``TETHER_SCRIPTED``)."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelError(f"{source}: cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{source}: {path} is not valid JSON: {exc}") from None
    responses: object = cast(dict[str, object], data).get("responses") if isinstance(data, dict) else data
    if not isinstance(responses, list):
        raise ModelError(f"{source}: {path}: expected a list of responses or {{'responses': [...]}}")
    try:
        script = [ScriptedResponse.from_json(r) for r in cast(list[dict[str, Any]], responses)]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ModelError(f"{source}: {path}: bad response: {exc}") from None
    info: ModelInfo = {**SCRIPTED_MODEL, "id": path.stem, "name": f"scripted ({path.name})"}
    return ResolvedModel(info, ScriptedModel(script, model=info))
