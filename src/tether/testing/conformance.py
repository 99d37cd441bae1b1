"""Runs agent-loop conformance scenarios and prints their normalized traces.

The scenario and trace formats are those of ``reference/conformance/README.md``; the traces of the
reference implementation live next to the scenarios, so comparing the two as JSON values tells
whether tether's loop behaves like pi's.

    python -m tether.testing.conformance SCENARIO.json              # one trace on stdout
    python -m tether.testing.conformance --all SCENARIO_DIR OUT_DIR  # a trace file per scenario
    python -m tether.testing.conformance --check SCENARIO_DIR TRACE_DIR

The command runs them on a virtual clock (``virtual_time``): their tools race by their delays, and
on a real clock a loaded machine can turn two ends round. ``run_scenario`` runs on whatever loop
awaits it; the tests run it on the virtual clock too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from tether.agent import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ToolUpdate,
    TurnContext,
    run_agent_loop,
    run_agent_loop_continue,
)
from tether.ai.abort import AbortController, AbortSignal
from tether.ai.event_stream import AssistantMessageEventStream, empty_usage
from tether.ai.types import Context, SimpleStreamOptions
from tether.testing import virtual_time
from tether.testing.scripted import SCRIPTED_MODEL, ScriptedModel, ScriptedResponse, canonical_json
from tether.wire import AgentMessage, Message, ModelInfo

Json = dict[str, Any]

TOOL_ABORTED = "Tool execution was aborted"


# -- normalization (the trace format) -----------------------------------------------------------


def _text(text: str) -> str:
    """Validation messages differ between schema libraries past their first line."""
    return text.split("\n")[0] if text.startswith("Validation failed for tool") else text


def summarize_block(block: Mapping[str, Any]) -> Json:
    match block["type"]:
        case "text":
            return {"type": "text", "text": _text(block["text"])}
        case "thinking":
            return {"type": "thinking", "thinking": block["thinking"]}
        case "toolCall":
            return {
                "type": "toolCall",
                "id": block["id"],
                "name": block["name"],
                "arguments": block["arguments"],
            }
        case "image":
            return {"type": "image", "mimeType": block["mimeType"]}
        case other:
            return {"type": other}


def summarize_message(message: Mapping[str, Any]) -> Json:
    match message["role"]:
        case "user":
            content = message["content"]
            return {
                "role": "user",
                "content": content if isinstance(content, str) else [summarize_block(b) for b in content],
            }
        case "assistant":
            summary: Json = {
                "role": "assistant",
                "content": [summarize_block(b) for b in message["content"]],
                "stopReason": message["stopReason"],
            }
            if message.get("errorMessage"):
                summary["errorMessage"] = message["errorMessage"]
            return summary
        case "toolResult":
            return {
                "role": "toolResult",
                "toolCallId": message["toolCallId"],
                "toolName": message["toolName"],
                "isError": message["isError"],
                "content": [summarize_block(b) for b in message["content"]],
            }
        case role:
            return {"role": role}


def _result_texts(result: AgentToolResult[Any] | None) -> list[str]:
    content = result.content if result is not None else []
    return [_text(c["text"]) if c["type"] == "text" else f"[{c['type']}]" for c in content]


def normalize_event(event: AgentEvent) -> Json:
    """One event of the trace: only what the reference and tether must agree on."""
    match event["type"]:
        case "agent_start" | "turn_start":
            return {"type": event["type"]}
        case "agent_end":
            return {"type": "agent_end", "messages": [summarize_message(m) for m in event["messages"]]}
        case "turn_end":
            return {
                "type": "turn_end",
                "message": summarize_message(event["message"]),
                "toolResults": [summarize_message(m) for m in event["toolResults"]],
            }
        case "message_start" | "message_end":
            return {"type": event["type"], "message": summarize_message(event["message"])}
        case "message_update":
            inner = cast(Mapping[str, Any], event["assistantMessageEvent"])
            normalized: Json = {"type": inner["type"], "contentIndex": inner.get("contentIndex")}
            if inner["type"] in ("text_delta", "thinking_delta"):
                normalized["delta"] = inner["delta"]
            return {"type": "message_update", "event": normalized}
        case "tool_execution_start":
            return {
                "type": event["type"],
                "toolCallId": event["toolCallId"],
                "toolName": event["toolName"],
                "args": event["args"],
            }
        case "tool_execution_update":
            return {
                "type": event["type"],
                "toolCallId": event["toolCallId"],
                "toolName": event["toolName"],
                "partialResult": _result_texts(event["partialResult"]),
            }
        case "tool_execution_end":
            result: Json = {"content": _result_texts(event["result"])}
            if event["result"].terminate:
                result["terminate"] = True
            return {
                "type": event["type"],
                "toolCallId": event["toolCallId"],
                "toolName": event["toolName"],
                "isError": event["isError"],
                "result": result,
            }


# -- the scenario's world: tools, hooks, model --------------------------------------------------


async def abortable_sleep(seconds: float, signal: AbortSignal | None) -> None:
    """Sleep, failing with ``Tool execution was aborted`` if ``signal`` is or becomes aborted."""
    if signal is None:
        await asyncio.sleep(seconds)
        return
    if signal.aborted:
        raise RuntimeError(TOOL_ABORTED)
    loop = asyncio.get_running_loop()
    slept: asyncio.Future[None] = loop.create_future()

    def wake(_reason: object) -> None:
        if not slept.done():
            slept.set_exception(RuntimeError(TOOL_ABORTED))

    timer = loop.call_later(seconds, lambda: slept.done() or slept.set_result(None))
    remove = signal.add_listener(wake)
    try:
        await slept
    finally:
        timer.cancel()
        remove()


def scenario_tool(spec: Mapping[str, Any]) -> AgentTool:
    """A tool that behaves as the scenario's ``behavior`` says."""
    behavior: Mapping[str, Any] = spec.get("behavior") or {}

    async def execute(
        tool_call_id: str, params: Any, signal: AbortSignal | None, on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        updates: list[str] = behavior.get("updates") or []
        for update in updates:
            if on_update is not None:
                on_update(AgentToolResult(content=[{"type": "text", "text": update}], details={}))
        if behavior.get("delayMs"):
            await abortable_sleep(behavior["delayMs"] / 1000, signal)
        if behavior.get("throw"):
            raise RuntimeError(behavior["throw"])
        result_text = behavior.get("result")
        if result_text is None:
            result_text = canonical_json(params) if behavior.get("echoArgs") else "ok"
        return AgentToolResult(
            content=[{"type": "text", "text": result_text}],
            details=behavior.get("details") or {},
            terminate=True if behavior.get("terminate") else None,
        )

    return AgentTool(
        name=spec["name"],
        label=spec["name"],
        description=spec.get("description") or spec["name"],
        parameters=spec.get("parameters") or {"type": "object", "properties": {}},
        execute=execute,
        execution_mode=spec.get("executionMode"),
    )


def context_message(message: Mapping[str, Any]) -> AgentMessage:
    """A scenario's context message with the fields the transcript needs filled in."""
    if message["role"] == "assistant":
        defaults: Json = {
            "api": "scripted",
            "provider": "scripted",
            "model": "scripted",
            "usage": empty_usage(),
            "stopReason": "stop",
            "timestamp": 0,
        }
    elif message["role"] == "toolResult":
        defaults = {"isError": False, "timestamp": 0}
    else:
        defaults = {"timestamp": 0}
    return cast(AgentMessage, {**defaults, **message})


def user_message(text: str) -> AgentMessage:
    return {"role": "user", "content": text, "timestamp": 0}


def _convert_to_llm(messages: list[AgentMessage]) -> list[Message]:
    return [m for m in messages if m["role"] in ("user", "assistant", "toolResult")]  # pyright: ignore[reportReturnType]


class _Polls:
    """The k-th call returns the k-th list of texts as user messages; ``[]`` once exhausted."""

    def __init__(self, script: Sequence[Sequence[str]] | None) -> None:
        self._script = script or []
        self._calls = 0

    async def __call__(self) -> list[AgentMessage]:
        index = self._calls
        self._calls += 1
        texts: Sequence[str] = self._script[index] if index < len(self._script) else []
        return [user_message(t) for t in texts]


def _hooks(hooks: Mapping[str, Any], turns_ended: list[int]) -> dict[str, Any]:
    """The loop-config hooks of a scenario's ``hooks`` object."""
    config: dict[str, Any] = {}
    keep = hooks.get("keepLastMessages")
    if keep:

        async def transform_context(
            messages: list[AgentMessage], signal: AbortSignal | None
        ) -> list[AgentMessage]:
            return messages[-keep:]

        config["transform_context"] = transform_context

    block: Mapping[str, str | None] | None = hooks.get("block")
    if block is not None:

        async def before_tool_call(
            ctx: BeforeToolCallContext, signal: AbortSignal | None
        ) -> BeforeToolCallResult | None:
            if ctx.tool_call["id"] not in block:
                return None
            return BeforeToolCallResult(block=True, reason=block[ctx.tool_call["id"]])

        config["before_tool_call"] = before_tool_call

    after: Mapping[str, Mapping[str, Any]] | None = hooks.get("after")
    if after is not None:

        async def after_tool_call(
            ctx: AfterToolCallContext, signal: AbortSignal | None
        ) -> AfterToolCallResult | None:
            override = after.get(ctx.tool_call["id"])
            if override is None:
                return None
            if override.get("throw"):
                raise RuntimeError(override["throw"])
            texts: list[str] | None = override.get("content")
            return AfterToolCallResult(
                content=[{"type": "text", "text": t} for t in texts] if texts is not None else None,
                is_error=override.get("isError"),
                terminate=override.get("terminate"),
            )

        config["after_tool_call"] = after_tool_call

    stop_after: Sequence[int] | None = hooks.get("stopAfterTurns")
    if stop_after is not None:

        async def should_stop_after_turn(ctx: TurnContext) -> bool:
            return turns_ended[0] in stop_after

        config["should_stop_after_turn"] = should_stop_after_turn
    return config


# -- running a scenario -------------------------------------------------------------------------


async def run_scenario(scenario: Mapping[str, Any], *, abortable: bool = True) -> Json:
    """Run one scenario through tether's loop; returns its trace ``{events, requests, result}``.
    ``abortable=False`` runs it without an abort signal (the loop's other path for tools: no
    abort grace to watch), for a scenario that does not abort."""
    if not abortable and scenario.get("abortOn") is not None:
        raise ValueError("a scenario that aborts needs an abort signal")
    events: list[Json] = []
    requests: list[Json] = []
    controller = AbortController()
    turns_ended = [0]
    seen: dict[str, int] = {}
    abort_on: Mapping[str, Any] | None = scenario.get("abortOn")

    model = ScriptedModel(ScriptedResponse.from_json(r) for r in scenario.get("responses", []))

    def stream_fn(
        info: ModelInfo, context: Context, options: SimpleStreamOptions | None
    ) -> AssistantMessageEventStream:
        requests.append(
            {
                "systemPrompt": context.get("systemPrompt") or "",
                "messages": [summarize_message(m) for m in context["messages"]],
                "tools": [t["name"] for t in context.get("tools", [])],
            }
        )
        return model(info, context, options)

    async def emit(event: AgentEvent) -> None:
        """Record, count and abort inside the loop's own awaited emit, before the loop goes on."""
        if event["type"] == "turn_end":
            turns_ended[0] += 1
        events.append(normalize_event(event))
        seen[event["type"]] = seen.get(event["type"], 0) + 1
        if (
            abort_on is not None
            and event["type"] == abort_on["event"]
            and seen[event["type"]] == abort_on.get("nth", 1)
        ):
            controller.abort()

    config = AgentLoopConfig(
        model=SCRIPTED_MODEL,
        convert_to_llm=_convert_to_llm,
        tool_execution=scenario.get("toolExecution", "parallel"),
        get_steering_messages=_Polls(scenario.get("steering")),
        get_follow_up_messages=_Polls(scenario.get("followUps")),
        **_hooks(scenario.get("hooks") or {}, turns_ended),
    )
    context = AgentContext(
        system_prompt=scenario.get("systemPrompt", ""),
        messages=[context_message(m) for m in scenario.get("context", [])],
        tools=[scenario_tool(t) for t in scenario.get("tools", [])],
    )
    signal = controller.signal if abortable else None
    if scenario.get("mode") == "continue":
        result = await run_agent_loop_continue(context, config, emit, signal, stream_fn)
    else:
        prompts = [user_message(p) for p in scenario.get("prompts", [])]
        result = await run_agent_loop(prompts, context, config, emit, signal, stream_fn)
    return {"events": events, "requests": requests, "result": [summarize_message(m) for m in result]}


def load_scenario(path: Path) -> Json:
    return json.loads(path.read_text(encoding="utf-8"))


def dump_trace(trace: Json) -> str:
    return json.dumps(trace, indent=1, ensure_ascii=False) + "\n"


def scenario_paths(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json"))


async def _check(scenario_dir: Path, trace_dir: Path) -> int:
    failed = 0
    for path in scenario_paths(scenario_dir):
        expected_path = trace_dir / path.name
        if not expected_path.exists():
            print(f"MISSING {path.stem}: no trace {expected_path}")
            failed += 1
            continue
        actual = await run_scenario(load_scenario(path))
        if actual == json.loads(expected_path.read_text(encoding="utf-8")):
            print(f"ok      {path.stem}")
        else:
            print(f"DIFFERS {path.stem}")
            failed += 1
    return 1 if failed else 0


async def _main(args: argparse.Namespace) -> int:
    if args.check:
        return await _check(Path(args.check[0]), Path(args.check[1]))
    if args.all:
        scenario_dir, out_dir = Path(args.all[0]), Path(args.all[1])
        out_dir.mkdir(parents=True, exist_ok=True)
        for path in scenario_paths(scenario_dir):
            (out_dir / path.name).write_text(
                dump_trace(await run_scenario(load_scenario(path))), encoding="utf-8"
            )
        return 0
    if args.scenario is None:
        print(
            "give a SCENARIO.json, --all SCENARIO_DIR OUT_DIR or --check SCENARIO_DIR TRACE_DIR",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(dump_trace(await run_scenario(load_scenario(Path(args.scenario)))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tether.testing.conformance", description="Run agent-loop conformance scenarios."
    )
    parser.add_argument("scenario", nargs="?", help="a scenario file: print its trace")
    parser.add_argument(
        "--all", nargs=2, metavar=("SCENARIO_DIR", "OUT_DIR"), help="write a trace per scenario"
    )
    parser.add_argument("--check", nargs=2, metavar=("SCENARIO_DIR", "TRACE_DIR"), help="compare with traces")
    args = parser.parse_args(argv)
    try:
        return virtual_time.run(_main(args))  # the tools' delays decide their order, not the load
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (KeyError, TypeError, AttributeError) as exc:
        print(
            f"error: invalid scenario ({type(exc).__name__}: {exc}); see reference/conformance/README.md",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
