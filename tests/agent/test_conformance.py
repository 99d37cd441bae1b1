"""Every conformance scenario gives exactly the reference's trace (compared as JSON values)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_support import OWN_CONFORMANCE

from reference_paths import CONFORMANCE
from tether.testing import virtual_time
from tether.testing.conformance import load_scenario, run_scenario, scenario_paths


def _cases() -> list[tuple[Path, Path]]:
    cases: list[tuple[Path, Path]] = []
    for root in (
        CONFORMANCE,
        OWN_CONFORMANCE,
        OWN_CONFORMANCE / "abort_sweep",
        OWN_CONFORMANCE / "fuzz",
    ):
        cases += [(path, root / "traces" / path.name) for path in scenario_paths(root / "scenarios")]
    return cases


def test_the_shared_scenarios_are_there() -> None:
    found = scenario_paths(CONFORMANCE / "scenarios")
    assert len(found) >= 29, f"expected the 29 public scenarios in {CONFORMANCE}"


@pytest.mark.parametrize(("scenario", "trace"), _cases(), ids=lambda p: p.stem if isinstance(p, Path) else "")
def test_scenario_matches_reference_trace(scenario: Path, trace: Path) -> None:
    expected = json.loads(trace.read_text(encoding="utf-8"))
    actual = virtual_time.run(run_scenario(load_scenario(scenario)))
    assert actual["events"] == expected["events"]
    assert actual["requests"] == expected["requests"]
    assert actual["result"] == expected["result"]


def _unaborted() -> list[tuple[Path, Path]]:
    return [case for case in _cases() if "abortOn" not in json.loads(case[0].read_text(encoding="utf-8"))]


@pytest.mark.parametrize(
    ("scenario", "trace"), _unaborted(), ids=lambda p: p.stem if isinstance(p, Path) else ""
)
def test_scenario_without_an_abort_signal_matches_too(scenario: Path, trace: Path) -> None:
    """A run without a signal takes another path for its tools (started and ended in the run's
    task, no abort grace to watch): every scenario that does not abort gives the same trace."""
    expected = json.loads(trace.read_text(encoding="utf-8"))
    actual = virtual_time.run(run_scenario(load_scenario(scenario), abortable=False))
    assert actual["events"] == expected["events"]
    assert actual["requests"] == expected["requests"]
    assert actual["result"] == expected["result"]


def _load_generator(name: str) -> Any:
    import importlib.util
    import sys

    fuzz = OWN_CONFORMANCE / "fuzz"
    if str(fuzz) not in sys.path:
        sys.path.insert(0, str(fuzz))  # generate2 builds on generate
    spec = importlib.util.spec_from_file_location(f"fuzz_{name}", fuzz / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fuzz_corpus_is_the_generators() -> None:
    """The committed fuzz scenarios are exactly what ``fuzz/generate.py`` (``fz-``) and
    ``fuzz/generate2.py`` (``fy-``) write (none edited)."""
    one, two = _load_generator("generate"), _load_generator("generate2")
    found = scenario_paths(OWN_CONFORMANCE / "fuzz" / "scenarios")
    expected = [f"fz-{one.SEED}-{i:04d}" for i in set(one.KEPT)] + [
        f"fy-{two.SEED}-{i:04d}" for i in set(two.KEPT)
    ]
    assert [p.stem for p in found] == sorted(expected)
    for path in found:
        index = int(path.stem.rsplit("-", 1)[1])
        scenario = json.loads(path.read_text(encoding="utf-8"))
        if path.stem.startswith("fz-"):
            assert scenario == one.generate(one.SEED, index)
        else:
            assert scenario == two.generate(two.SEED, index)[0]


def test_cli_prints_a_trace_and_reports_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tether.testing.conformance import main

    scenario = CONFORMANCE / "scenarios" / "text-only.json"
    assert main([str(scenario)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((CONFORMANCE / "traces" / "text-only.json").read_text())

    broken = tmp_path / "broken.json"
    broken.write_text('{"prompts": ["go"], "tools": [{"behavior": {}}]}')
    assert main([str(broken)]) == 1
    assert "invalid scenario" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.json")]) == 1
