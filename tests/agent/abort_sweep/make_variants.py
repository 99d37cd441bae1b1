"""Write one scenario per event of each base scenario, aborting inside exactly that event.

The reference then gives the trace of every variant (see ../README.md), so abort timing is
checked event by event against the reference, not only for the invariants.

    python tests/agent/abort_sweep/make_variants.py    # from the repository root
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
AGENT_TESTS = HERE.parent
CONFORMANCE = AGENT_TESTS.parents[1] / "reference" / "conformance"
BASES = [
    CONFORMANCE / "scenarios" / "steering-and-follow-up-together.json",
    AGENT_TESTS / "scenarios" / "mixed-blocks-one-response.json",
    AGENT_TESTS / "scenarios" / "parallel-updates-with-delays.json",
    AGENT_TESTS / "scenarios" / "sequential-block-and-invalid.json",
]


def main() -> None:
    out = HERE / "scenarios"
    out.mkdir(exist_ok=True)
    for base_path in BASES:
        base = json.loads(base_path.read_text())
        trace = json.loads((base_path.parent.parent / "traces" / base_path.name).read_text())
        seen: Counter[str] = Counter()
        for index, event in enumerate(trace["events"]):
            seen[event["type"]] += 1
            name = f"{base['name']}--abort-{index:02d}-{event['type']}"
            variant = {**base, "name": name, "abortOn": {"event": event["type"], "nth": seen[event["type"]]}}
            (out / f"{name}.json").write_text(json.dumps(variant, indent=1) + "\n")


if __name__ == "__main__":
    main()
