"""``tether.tune_gc``: the collector setting a program with many sessions opts into, and the
library's promise that without it the process's collector is left as the program set it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tether.gc_tuning import YOUNG_THRESHOLD

TUNED = """
import gc, json, tether
before = []  # made before the call: frozen, never examined by a collection again
tether.tune_gc()
after = []
print(json.dumps({
    "threshold": gc.get_threshold(),
    "before_examined": any(o is before for o in gc.get_objects()),
    "after_examined": any(o is after for o in gc.get_objects()),
}))
"""

LIBRARY_ONLY = """
import asyncio, gc, json, tempfile
from pathlib import Path
import tether
from tether.testing.scripted import text

async def main(folder):
    model = tether.ScriptedModel([tether.reply(text("hello"))], keep_requests=False)
    sessions = tether.SessionManager.at(Path(folder) / "sessions.db")
    core = tether.AgentSession(tether.Agent(model=model.model, stream_fn=model), sessions.create(folder))
    await core.prompt("hi")
    session_id = core.session_id
    await core.close()
    reopened = sessions.open(session_id, readonly=True)  # loads under the store's own pause
    sessions.close()
    return len(reopened.messages)

gc.set_threshold(1234, 5, 6)
with tempfile.TemporaryDirectory() as folder:
    messages = asyncio.run(main(folder))
print(json.dumps({"messages": messages, "threshold": gc.get_threshold(), "enabled": gc.isenabled(),
                  "frozen": gc.get_freeze_count()}))
"""


def _probe(source: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.subprocess
def test_tune_gc_freezes_what_exists_and_raises_the_young_threshold_only() -> None:
    seen = _probe(TUNED)
    assert seen == {
        "threshold": [YOUNG_THRESHOLD, 10, 10],
        "before_examined": False,
        "after_examined": True,
    }


@pytest.mark.subprocess
def test_the_library_leaves_the_collector_as_the_program_set_it() -> None:
    seen = _probe(LIBRARY_ONLY)
    assert seen == {"messages": 2, "threshold": [1234, 5, 6], "enabled": True, "frozen": 0}
