"""Helpers shared by the agent tests (a uniquely named module: test folders have no __init__)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_CONFORMANCE = REPO_ROOT.parent / "shared" / "conformance"
"""The reference scenarios and traces (``../shared`` from the repository root)."""
OWN_CONFORMANCE = Path(__file__).resolve().parent
"""tether's own scenarios (``scenarios/``) and the reference's traces for them (``traces/``)."""
