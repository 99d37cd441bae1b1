"""Abort at every event of every conformance scenario: the run still ends well.

Exhaustive rather than sampled: for each scenario, run it once without an abort, then once per
event of that run with the abort raised inside the emit of exactly that event. Tool delays are
capped at 2 ms so the whole sweep stays fast.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from agent_support import OWN_CONFORMANCE, check_invariants

from reference_paths import CONFORMANCE
from tether.testing.conformance import load_scenario, run_scenario, scenario_paths

SCENARIOS = [
    *scenario_paths(CONFORMANCE / "scenarios"),
    *scenario_paths(OWN_CONFORMANCE / "scenarios"),
]


def _quick(scenario: dict[str, Any]) -> dict[str, Any]:
    quick = {key: value for key, value in scenario.items() if key != "abortOn"}
    tools: list[dict[str, Any]] = []
    for tool in scenario.get("tools", []):
        behavior = dict(tool.get("behavior", {}))
        if behavior.get("delayMs"):
            behavior["delayMs"] = min(behavior["delayMs"], 2)
        tools.append({**tool, "behavior": behavior})
    quick["tools"] = tools
    return quick


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
async def test_abort_at_every_event_ends_the_run_cleanly(path: Path) -> None:
    scenario = _quick(load_scenario(path))
    baseline = await run_scenario(scenario)
    check_invariants(baseline)
    tasks_before = asyncio.all_tasks()

    seen: Counter[str] = Counter()
    finished: list[tuple[list[Any], int]] = []
    for event in baseline["events"]:
        seen[event["type"]] += 1
        variant = {**scenario, "abortOn": {"event": event["type"], "nth": seen[event["type"]]}}
        trace = await run_scenario(variant)
        check_invariants(trace)
        assert asyncio.all_tasks() <= tasks_before, "a task outlived the run"
        finished.append((trace["events"], len(trace["events"])))
    await asyncio.sleep(0.015)  # longer than any tool delay: a straggler would have emitted by now
    assert all(len(events) == count for events, count in finished), "events emitted after a run returned"
