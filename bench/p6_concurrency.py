"""P6: 1,000 and 10,000 agent sessions in one process against a streaming model server.

Each session runs 3 prompts; the model answers each with a call of the ``echo`` tool, then with
a 10-word text (openai-completions, a chunk every 2 ms, from ``_p6_server.py`` in a process of its
own). So a session makes 6 streamed requests and stores 12 messages.

- ``tether``: an ``AgentSession`` per session, each with a stored session (one SQLite file for
  all, default durability), all in one event loop, default connection settings. Sessions are
  created ``deferred`` (stored with their first message), as every front end creates them (the
  CLI, RPC, ACP, ``tether serve``): the bench measures what a user of tether gets, and a session
  created eagerly (a row insert and a commit of its own on the event loop before the run) is a
  path no front end takes.
- ``floor``: the least a program doing the same must do: per session one httpx2 client (one
  connection, no pool contention; all sharing a TLS context), at most 1,000 requests streaming
  at once (tether's default limit per provider), ``aiter_lines`` + ``jiter`` on each
  ``data:`` line, the tool call's arguments joined and run, and each message appended to one
  SQLite table (WAL, ``synchronous=NORMAL``, autocommit: one commit per message, on the event
  loop's thread: the simple program; tether commits batches on a thread of its own).

Both also run without storing anything (``tether``: an ``Agent`` per session). Each run is a
fresh process; CPU is its user+system time from start of the sessions to the end (the server's
is not counted), "loop thread CPU" the part spent on the event loop's thread, RSS its peak
(``VmHWM``: ``ru_maxrss`` would include the parent's peak). Runs alternate tether/floor so machine
noise hits both, every other repetition in reverse so a load rising through one does not always
land on the side that runs first. At 10,000 sessions the process needs more file descriptors than
usual: one socket per concurrent stream plus one lock file per open stored session.

How far to trust a ratio: "x floor" is the median of tether/floor per repetition, with their
range, and every row names the load average its runs saw. That range is not the figure's whole
uncertainty: on this machine (2 cores shared) a CPU second buys less work under load, and not
alike for both sides, so the same code read 1.43-1.68x stored on different days while each day's
3 repetitions agreed closely. Measured (session 33, 1,000 stored, tune_gc): the floor's CPU for
the same run went 6.96-9.18 s within 4 minutes as the load went 3.5 to 8.5, two consecutive
floor runs differing by up to 15%; the work did not grow (its reads 8.7k-12.5k, not with CPU).
At load 7-10 the runs got 25-34% of a core. So the output also prints each run's share of a
core (CPU/wall), its preemptions per CPU second, its loop passes and sockets ready per request
(how the run went: tether's stored runs took 56-93 passes, the most at the highest load, the
floor's 37-41), and the drift: the same client and code's CPU one repetition later (x0.92-1.31
in that sitting, wider than its ratios' range). Three sittings of 3 repetitions in 25 minutes
(load 4.5-10) read stored 1.54x (1.44-1.58), 1.52x (1.39-1.57), 1.47x (1.39-1.58) and in memory
1.09x (1.06-1.40), 1.38x (1.28-1.58), 1.35x (1.29-1.35): a ratio is known to about +-0.1 stored
and +-0.15 in memory, not to the second decimal. A change is judged by runs of both versions
interleaved in one sitting, never against a figure from another day.

Start-up is not the sessions' cost, so before the timed window each worker runs the same
workload once with ``WARM_UP_SESSIONS`` sessions (a store of its own): every module either side
imports lazily (tether its agent, session and store modules, pydantic, pydantic-core's encoder;
both httpx2's transport, anyio, h11, truststore) is imported then, not in the window, where it
was ~3% of the samples. The worker reports any module imported inside the window anyway, and
the output names them.

The start-up burst: every session opens its connection at once, and each connect ends only
once the event loop has run every session's first step, ~1.2 s on both sides alike at load 4-6
(floor 1.15 s, tether 1.17 s median, niced). On a loaded machine (load average >= 15) that took
tether past its 10-second connect timeout (the floor's is 600 s) and the 1,000-session run
failed. Bounding the connects in flight (at most N sessions between their start and their first
response) was tried and rejected: it turns the burst into a rolling start, early sessions end
before late ones begin, peak concurrency drops below the session count and tether's lanes reuse
their idle connections (710 connections instead of 1,000 with N = 100, 890 with N = 250): another
workload. So the burst stays; a run that fails says why (the first failed session's error), is
run once more, and a size whose runs still fail is reported as failed while the others go on. The
model server listens with a backlog of 4,096 (the kernel caps it at ``net.core.somaxconn``, 4,096
on Linux >= 5.4, 128 before: below 1,000 the kernel would drop handshakes of the burst).

Storage per message: what storing adds, per message stored (``(CPU stored - CPU in memory) /
messages``, from the stored and in-memory runs of the same repetition); for tether that is the
``AgentSession`` and its session against a bare ``Agent``, for the floor the JSON and the inserts.
Printed for reference only: here it is a small difference of two large totals that the sockets
and the start-up burst make noisy (22 to 317 µs over 3 rounds); ``p6_storage`` measures it with
the model in process, and records the goal's ratio.

Goals (issue 40): CPU against the floor <= 1.4x stored and <= 1.2x in memory at 1,000 sessions,
<= 1.3x and <= 1.1x at 10,000 (storage <= 75 µs CPU per message: ``p6_storage``); 10,000 stored
sessions finish with peak RSS <= 1 GB.

The collector: each row says which one its process ran under, the same on both sides.
``tune_gc``: ``tether.tune_gc()`` once the modules are imported (start-up frozen, young threshold
raised), what ``tether serve``, ``tether worker`` and ``docs/library.md``'s advice to a program
with many sessions do; the floor makes the same call, a setting a plain program could make too.
``default``: Python's own (young threshold 700), what a library user gets who makes no call. At
1,000 sessions both run; at 10,000, ``tune_gc`` only (one run of each side takes minutes).
``--collector NAME`` runs one of them at every size.

    python bench/p6_concurrency.py [--collector tune_gc|default]
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import resource
import selectors
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import jiter

from _summary import peak_rss_mb, record
from _table import print_table

HERE = Path(__file__).resolve().parent
_Run = TypeVar("_Run")
PROMPTS = 3
REPEATS = {1_000: 3, 10_000: 1}
COLLECTORS = {1_000: ("tune_gc", "default"), 10_000: ("tune_gc",)}
"""Which collector settings run at each size (module docstring)."""
WARM_UP_SESSIONS = 10
"""The workload run once before the timed window, so that lazy imports happen outside it: several
sessions, because some paths are taken only when sessions run side by side (the store's writer
encodes a batch of several sessions' entries with pydantic-core, imported on first use)."""
ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


# -- the floor ------------------------------------------------------------------------------------


async def floor_call(
    client: httpx2.AsyncClient, url: str, messages: list[dict[str, Any]], slots: asyncio.Semaphore
) -> dict[str, Any]:
    """One streamed request: the assistant message (text or one tool call) it produced."""
    body = {"model": "m", "messages": messages, "stream": True, "tools": [{"type": "function",
            "function": {"name": "echo", "parameters": ECHO_SCHEMA}}]}  # fmt: skip
    text: list[str] = []
    call: dict[str, Any] | None = None
    arguments: list[str] = []
    async with slots, client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = jiter.from_json(line[6:].encode())
            for choice in chunk["choices"]:
                delta = choice["delta"]
                if delta.get("content"):
                    text.append(delta["content"])
                for tool in delta.get("tool_calls") or ():
                    if "id" in tool:
                        call = {
                            "id": tool["id"],
                            "type": "function",
                            "function": {"name": tool["function"]["name"]},
                        }
                    arguments.append(tool["function"].get("arguments") or "")
    if call is not None:
        call["function"]["arguments"] = "".join(arguments)
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": "".join(text)}


async def floor_session(
    index: int,
    url: str,
    db: sqlite3.Connection | None,
    tls: Any,
    slots: asyncio.Semaphore,
    transport: httpx2.AsyncBaseTransport | None,
) -> None:
    async with httpx2.AsyncClient(
        verify=tls, timeout=600, limits=httpx2.Limits(max_connections=1), transport=transport
    ) as client:
        messages: list[dict[str, Any]] = []

        def keep(message: dict[str, Any]) -> None:
            messages.append(message)
            if db is not None:
                db.execute("INSERT INTO entries VALUES (?, ?)", (f"s{index}", json.dumps(message)))

        for prompt in range(PROMPTS):
            keep({"role": "user", "content": f"session {index} prompt {prompt}: call echo"})
            while True:
                answer = await floor_call(client, url, messages, slots)
                keep(answer)
                if not answer.get("tool_calls"):
                    break
                call = answer["tool_calls"][0]
                result = json.loads(call["function"]["arguments"])["text"]
                keep({"role": "tool", "tool_call_id": call["id"], "content": result})


async def run_floor(
    sessions: int, url: str, store: Path | None, transport: httpx2.AsyncBaseTransport | None = None
) -> None:
    """The floor's sessions; ``transport``: the model answered in process (``p6_storage``), not
    over a socket."""
    db = None
    if store is not None:
        db = sqlite3.connect(store, isolation_level=None)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("CREATE TABLE entries (session TEXT, payload TEXT)")
    tls = httpx2.create_ssl_context()
    slots = asyncio.Semaphore(1_000)
    await asyncio.gather(
        *(floor_session(i, url + "/chat/completions", db, tls, slots, transport) for i in range(sessions))
    )
    if db is not None:
        db.close()


# -- tether ---------------------------------------------------------------------------------------


async def run_tether(
    sessions: int,
    url: str,
    store: Path | None,
    transport: httpx2.AsyncBaseTransport | None = None,
    *,
    unstored_sessions: bool = False,
) -> None:
    """tether's sessions; ``transport``: the model answered in process (``p6_storage``), through
    one client all sessions share, not the provider's connection pool. ``unstored_sessions``
    (without a ``store``): each agent inside an ``AgentSession`` without a session, the machinery
    a stored run adds before anything is stored (``p6_storage`` splits storage with it)."""
    from tether.agent import Agent, AgentTool, AgentToolResult
    from tether.ai import SimpleStreamOptions
    from tether.session import AgentSession, SessionManager

    async def echo(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        return AgentToolResult(content=[{"type": "text", "text": params["text"]}])

    tool = AgentTool(name="echo", label="echo", description="Echo text", parameters=ECHO_SCHEMA, execute=echo)
    model: Any = {"id": "m", "name": "m", "api": "openai-completions", "provider": "bench", "baseUrl": url,
                  "reasoning": False, "input": ["text"], "contextWindow": 100_000, "maxTokens": 1_000,
                  "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}  # fmt: skip

    client = None if transport is None else httpx2.AsyncClient(transport=transport)

    def agent(i: int) -> Agent:
        options = SimpleStreamOptions(api_key="k", session_id=f"s{i}", http_client=client)
        return Agent(model=model, tools=[tool], options=options)

    async def conversation(i: int, run: Any) -> None:
        for prompt in range(PROMPTS):
            await run(f"session {i} prompt {prompt}: call echo")

    try:
        if store is None and not unstored_sessions:
            agents = [agent(i) for i in range(sessions)]
            await asyncio.gather(*(conversation(i, a.prompt) for i, a in enumerate(agents)))
            _all_answered(a.messages for a in agents)
            return
        manager = None if store is None else SessionManager.at(store)
        cores = [
            AgentSession(
                agent(i), None if manager is None else manager.create(f"/bench/{i}", deferred=True), cwd=HERE
            )
            for i in range(sessions)
        ]
        await asyncio.gather(*(conversation(i, core.prompt) for i, core in enumerate(cores)))
        _all_answered(core.agent.messages for core in cores)
        for core in cores:
            await core.close()
        if manager is not None:
            manager.close()
    finally:
        if client is not None:
            await client.aclose()


def check_stored(kind: str, store: Path, sessions: int) -> None:
    """Raise unless ``store`` holds every session's ``PROMPTS * 4`` messages (tether's: 50 of its
    sessions opened and read back). Called after the timed window: the figures are the sessions'
    work alone (tether's 50 opens, inside it, added ~7 µs to each of 12,000 messages)."""
    expected = PROMPTS * 4
    if kind == "floor":
        db = sqlite3.connect(store)
        try:
            assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == sessions * expected
        finally:
            db.close()
        return
    from tether.session import SessionManager

    with SessionManager.at(store) as manager:
        records = manager.list()
        assert len(records) == sessions and all(r.message_count == expected for r in records)
        for record in records[:: max(1, sessions // 50)]:
            assert len(manager.open(record.id, readonly=True).messages) == expected


def _all_answered(transcripts: Iterable[list[Any]]) -> None:
    """Raise, naming how many sessions failed and the first error of the first one, unless every
    session holds its ``PROMPTS * 4`` messages. The first error, not the last message's: a session
    whose first prompt failed (a connect timed out in the start-up burst) runs the other two, and
    its last message then says nothing ("no error message")."""
    failed = [messages for messages in transcripts if len(messages) != PROMPTS * 4]
    if failed:
        error = next((m["errorMessage"] for m in failed[0] if m.get("errorMessage")), None)
        raise RuntimeError(f"{len(failed)} sessions failed; the first: {error or 'no error message'}")


# -- one measured run, in a fresh process ---------------------------------------------------------


def worker(kind: str, sessions: int, url: str, stored: bool, collector: str) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "sessions.db" if stored else None
        run = run_tether if kind == "tether" else run_floor
        # Start-up is not the sessions' cost: what either side imports lazily, it imports now.
        asyncio.run(run(WARM_UP_SESSIONS, url, Path(folder) / "warm-up.db" if stored else None))
        gc.collect()
        if collector == "tune_gc":
            from tether.gc_tuning import tune_gc

            tune_gc()
        imported = set(sys.modules)
        load_start = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        loop = asyncio.run(on_loop_thread(run(sessions, url, store)))
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        if store is not None:
            check_stored(kind, store, sessions)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    late = sorted(set(sys.modules) - imported)
    preempted = after.ru_nivcsw - before.ru_nivcsw
    figures = {"cpu": cpu, "wall": wall, "rss_mb": peak_rss_mb(), "preempted": preempted} | loop
    json.dump(figures | {"load_start": load_start, "load": os.getloadavg()[0], "late": late}, sys.stdout)


async def on_loop_thread(run: Coroutine[Any, Any, None]) -> dict[str, float]:
    """Run ``run``; the CPU seconds the event loop's thread spent meanwhile (threads excluded),
    its passes (calls of the selector) and the sockets those found ready: how the run went, which
    the machine's speed decides too (a slower client finds more of a response waiting per read
    and more sockets ready per pass), so a day's figures can be told from another's."""
    loop: Any = asyncio.get_running_loop()
    selector: selectors.BaseSelector = loop._selector  # asyncio's selector loop, the default on Linux
    select = selector.select
    passes = ready = 0

    def counted(timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        nonlocal passes, ready
        events = select(timeout)
        passes += 1
        ready += len(events)
        return events

    selector.select = counted  # pyright: ignore[reportAttributeAccessIssue]
    start = time.thread_time()
    try:
        await run
    finally:
        selector.select = select  # pyright: ignore[reportAttributeAccessIssue]
    loop_cpu = time.thread_time() - start
    return {"loop_cpu": loop_cpu, "passes": passes, "ready": ready}


def measure(kind: str, sessions: int, url: str, stored: bool, collector: str) -> dict[str, Any]:
    """One run in a fresh process; a failed run is said (its last line of error, the load) and
    run once more (module docstring: the start-up burst)."""
    args = [sys.executable, __file__, "--worker", kind, str(sessions), url, "store" if stored else "none"]
    args.append(collector)
    for attempt in (1, 2):
        out = subprocess.run(args, capture_output=True, text=True, check=False)
        if out.returncode == 0:
            return json.loads(out.stdout)
        last = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
        print(f"  {kind} x{sessions:,} {'stored' if stored else 'in memory'} failed (attempt {attempt}, load "
              f"{os.getloadavg()[0]:.1f}): {last}")  # fmt: skip
    raise RuntimeError(f"{kind} x{sessions} failed twice:\n{out.stderr[-3000:]}")


GOALS = {
    (1_000, True): "<= 1.4",
    (1_000, False): "<= 1.2",
    (10_000, True): "<= 1.3",
    (10_000, False): "<= 1.1",
}
"""Issue 40's goals for tether's CPU over the floor's, by (sessions, stored)."""


def main(collectors: tuple[str, ...] | None = None) -> None:
    server = subprocess.Popen(
        [sys.executable, str(HERE / "_p6_server.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None and server.stdin is not None
    url = f"http://127.0.0.1:{server.stdout.readline().strip()}"
    rows: list[list[str]] = []
    everything: list[list[dict[str, Any]]] = []
    failures: list[str] = []
    drifts: list[str] = []
    try:
        for (sessions, repeats), collector in (
            (size, collector) for size in REPEATS.items() for collector in collectors or COLLECTORS[size[0]]
        ):
            # Every repetition runs all four, so machine noise hits each alike and the stored and
            # in-memory runs of one repetition pair up for the storage cost per message.
            results: dict[tuple[str, bool], list[dict[str, Any]]] = {
                (kind, stored): [] for stored in (True, False) for kind in ("tether", "floor")
            }
            try:
                for repetition in range(repeats):
                    for kind, stored in in_turn(list(results), repetition):
                        results[kind, stored].append(measure(kind, sessions, url, stored, collector))
            except RuntimeError as error:  # the other sizes still run; main raises at the end
                failures.append(f"{sessions:,} sessions, {collector}: {str(error).splitlines()[0]}")
                continue
            everything += results.values()
            storage = storage_per_message(results, sessions)
            for stored in (True, False):
                label = "stored" if stored else "in memory"
                floors = results["floor", stored]
                paired = paired_ratios(results["tether", stored], floors)
                for kind in ("tether", "floor"):
                    runs = results[kind, stored]
                    rows.append([f"{sessions:,}", label, collector, kind, *figures(runs, sessions, floors),
                                 f"{statistics.median(storage[kind]):.0f} ({spread(storage[kind], 0)})" if stored else ""])  # fmt: skip
                record(
                    f"{sessions:,} sessions, {label}, {collector}: CPU",
                    statistics.median(paired),
                    "httpx2 + jiter + sqlite3 floor",
                    GOALS[sessions, stored],
                    samples=paired,
                    loads=[
                        x for runs in (results["tether", stored], floors) for r in runs for x in run_loads(r)
                    ],
                )
            drifts.append(f"{sessions:,} sessions, {collector}: {drift(results.values())}")
            if sessions == 10_000:
                rss = [r["rss_mb"] / 1024 for r in results["tether", True]]
                record(
                    f"10,000 stored sessions, {collector}: peak RSS (VmHWM) / 1 GB",
                    max(rss),
                    "1 GB",
                    "<= 1.0",
                    samples=rss,
                )
    finally:
        server.stdin.close()
        server.wait()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print_table(
        f"P6: sessions x {PROMPTS} prompts (tool call, then text), chunks every 2 ms; collector: "
        f"tune_gc = tether.tune_gc() after imports, default = Python's; medians of runs; CPU/wall: the "
        f"share of a core the run got; preempted: involuntary context switches per CPU second; passes: "
        f"the event loop's; ready/request: sockets it found ready per request (reads); load: the 1-minute "
        f"load average from the start of the first run to the end of the last (now: {load}); x floor: "
        f"median of tether/floor per repetition (lowest-highest)",
        [
            "sessions",
            "sessions are",
            "collector",
            "client",
            "CPU s",
            "CPU range",
            "loop thread CPU s",
            "wall s",
            "CPU/wall",
            "preempted /CPU s",
            "passes",
            "ready /request",
            "peak RSS MB",
            "load (1 min)",
            "x floor",
            "storage µs/message (range)",
        ],
        rows,
    )
    print("the same client and code one repetition later, CPU over CPU (the unit's own drift: ratios that")
    print("differ by less are not told apart by this run):")
    for line in drifts:
        print(f"  {line}")
    late = {name for runs in everything for r in runs for name in r["late"]}
    print(f"modules imported inside a timed window: {', '.join(sorted(late)) or 'none'}")
    if failures:
        raise RuntimeError("; ".join(failures))


def storage_per_message(
    runs: Mapping[tuple[str, bool], Sequence[Mapping[str, Any]]], sessions: int
) -> dict[str, list[float]]:
    """What storing cost each client per message, in µs of CPU, for each repetition: (stored -
    in memory) CPU over the messages of ``sessions``. Shared with ``p6_storage``, where the model
    answers in process."""
    return {
        kind: cpu_per_message(runs[kind, True], runs[kind, False], sessions) for kind in ("tether", "floor")
    }


def cpu_per_message(
    more: Sequence[Mapping[str, Any]], less: Sequence[Mapping[str, Any]], sessions: int
) -> list[float]:
    """``(more - less)`` CPU over the messages of ``sessions`` (``PROMPTS`` prompts of 4 messages
    each), in µs, for each repetition: each run is paired with the other's run of its repetition,
    so a repetition's load hits both."""
    messages = sessions * PROMPTS * 4
    return [(a["cpu"] - b["cpu"]) / messages * 1e6 for a, b in zip(more, less, strict=True)]


def figures(
    runs: Sequence[Mapping[str, Any]], sessions: int, floors: Sequence[Mapping[str, Any]]
) -> list[str]:
    """One client's cells of the table, from its runs at one size, setting and storage: CPU (median,
    range), loop thread CPU, wall, CPU/wall, preemptions per CPU second, loop passes, ready sockets
    per request, peak RSS, the load range and the median of its CPU over the floor's per repetition
    (with their range: the pairs' spread, not two medians' quotient)."""
    ratios = paired_ratios(runs, floors)
    requests = sessions * PROMPTS * 2

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    return [
        f"{median('cpu'):.2f}",
        spread(r["cpu"] for r in runs),
        f"{median('loop_cpu'):.2f}",
        f"{median('wall'):.2f}",
        f"{statistics.median(r['cpu'] / r['wall'] for r in runs):.0%}",
        f"{statistics.median(r['preempted'] / r['cpu'] for r in runs):.0f}",
        f"{median('passes'):.0f}",
        f"{median('ready') / requests:.2f}",
        f"{max(r['rss_mb'] for r in runs):.0f}",
        spread((x for r in runs for x in run_loads(r)), 1),
        f"{statistics.median(ratios):.2f}x ({spread(ratios)})",
    ]


def in_turn(runs: Sequence[_Run], repetition: int) -> list[_Run]:
    """The order of ``runs`` in ``repetition``: as given, then reversed in every other one, so load
    that rises or falls through a repetition does not always land on the side that runs first."""
    return list(runs) if repetition % 2 == 0 else list(reversed(runs))


def paired_ratios(mine: Sequence[Mapping[str, Any]], theirs: Sequence[Mapping[str, Any]]) -> list[float]:
    """``mine``'s CPU over ``theirs``' for each repetition (the two runs of one repetition)."""
    return [a["cpu"] / b["cpu"] for a, b in zip(mine, theirs, strict=True)]


def drift(runs: Iterable[Sequence[Mapping[str, Any]]]) -> str:
    """The lowest and highest CPU of a run over its predecessor's (same client, code and storage,
    one repetition apart) across ``runs`` (the runs of each such set, in order): how far the CPU
    second itself moved while the benchmark ran. Three pairs of a tether/floor ratio can agree
    closely within one run and still differ from another day's by 15% (1.43-1.68x stored at
    1,000 sessions, session 32): a CPU second on this machine is dearer under load (neighbours on
    the cores and caches), and not alike for both sides, so a ratio is only as good as this."""
    later = [b["cpu"] / a["cpu"] for ordered in runs for a, b in itertools.pairwise(ordered)]
    return f"x{spread(later)} ({len(later)} pairs)" if later else "one repetition: not measured"


def run_loads(run: Mapping[str, Any]) -> list[float]:
    """The 1-minute load average at a run's start and end (a run from before the start was
    recorded has its end's only)."""
    return [run[key] for key in ("load_start", "load") if key in run]


def spread(values: Iterable[float], digits: int = 2) -> str:
    """The lowest and highest of ``values``: ``lo-hi``."""
    ordered = sorted(values)
    return f"{ordered[0]:.{digits}f}-{ordered[-1]:.{digits}f}"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5] == "store", sys.argv[6])
    else:
        sys.path.insert(0, str(HERE))
        given = sys.argv[1:]
        if given and (len(given) != 2 or given[0] != "--collector" or given[1] not in ("tune_gc", "default")):
            sys.exit("usage: python bench/p6_concurrency.py [--collector tune_gc|default]")
        main((given[1],) if given else None)
