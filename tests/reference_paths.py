"""Where the tests find the reference material (``reference/`` at the repository root).

One place names these paths so that moving the material means editing one file. The module is
imported by name (``from reference_paths import ...``): pytest puts ``tests/`` on ``sys.path``
(``pythonpath`` in ``pyproject.toml``), since test folders have no ``__init__``.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REFERENCE = REPO_ROOT / "reference"

WIRE_SEED = REFERENCE / "seeds" / "000-wire.txt"
"""Seed 000: the wire types (content blocks, usage, messages, streaming events, model)."""

CONFORMANCE = REFERENCE / "conformance"
"""The reference's agent-loop scenarios (``scenarios/``) and its trace for each (``traces/``)."""

FIXTURE_STREAMS = REFERENCE / "fixtures" / "streams"
"""The 40 recorded provider streams, ``<api>/<name>.json``, with ``<name>.expected.json`` beside."""
