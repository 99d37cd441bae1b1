"""An instrumented run leaves nothing for the garbage collector either (``garbage_support``):
its spans are recorded, and the run, its tool batches and its model calls are freed as soon as
the agent lets them go."""

from __future__ import annotations

from telemetry_support import Otel

from garbage_support import check_runs_leave_no_garbage


async def test_a_finished_instrumented_run_needs_no_collection(otel: Otel) -> None:
    await check_runs_leave_no_garbage(instrumentation=otel.instrumentation(capture_content=True))
    assert {span.name for span in otel.spans()} >= {
        "invoke_agent tether",
        "chat scripted",
        "execute_tool instant",
    }
