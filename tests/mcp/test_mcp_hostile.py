"""MCP servers that misbehave (``hostile_server.py``): a damaged entry is left out and said, the
rest of the server still works, and nothing it sends can poison the session's later requests."""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest
from tests.mcp.conftest import TOY
from tests.mcp.test_mcp_session import failure_of, prompted, results, session, text_of

from tether.agent.tool_check import name_problem, parameters_problem
from tether.mcp import McpServerConfig
from tether.testing.scripted import ScriptedModel, reply, tool_call

HOSTILE = TOY.with_name("hostile_server.py")


def hostile(mode: str) -> McpServerConfig:
    return McpServerConfig("h", command=sys.executable, args=(str(HOSTILE), mode))


async def test_tools_with_schemas_providers_refuse_are_left_out_and_the_rest_works() -> None:
    """Three of the four bad schemas failed the SDK's check of the whole ``tools/list`` page,
    so the server failed ("3 validation errors for ListToolsResult") and its good tool with it;
    the fourth (a property of type ``strng``) went to the provider, which refuses the request."""
    model = ScriptedModel([reply(tool_call("mcp__h__echo", {"text": "hi"})), reply("done")])
    core = session(model, hostile("schemas"))
    try:
        [echoed] = results(await core.prompt("go"))
        assert core.mcp is not None
        [status] = core.mcp.statuses()
    finally:
        await core.close()
    assert status.status == "ready" and status.tools == ("mcp__h__echo",)
    assert status.left_out == (
        "not_an_object: its parameters schema must have type 'object', not 'string'",
        "bad_type: parameters.properties.a.type 'strng' is not a JSON type",
        "bad_properties: parameters.properties must be an object of schemas",
        "bad_required: parameters.required must be a list of names",
    )
    assert [
        t["name"] for t in model.requests[0].context.get("tools") or [] if t["name"].startswith("mcp__")
    ] == ["mcp__h__echo"]
    assert not echoed["isError"] and text_of(echoed) == "echo: hi"


async def test_a_damaged_image_is_left_out_said_and_a_mislabelled_one_relabelled() -> None:
    """An image goes into the history and with every later request: damaged base64 (or bytes
    that are no image) made the provider refuse each of them; a PNG labelled ``text/html`` too."""
    model = ScriptedModel([reply(tool_call("mcp__h__show", {})), reply("done")])
    core = session(model, hostile("contents"))
    try:
        [shown] = results(await core.prompt("go"))
    finally:
        await core.close()
    text, *images = shown["content"]
    assert text["type"] == "text"
    assert "[image result (image/png) left out: its data is not valid base64]" in text["text"]
    assert [(i["type"], i["mimeType"]) for i in images] == [("image", "image/png"), ("image", "image/png")]


async def test_a_notification_flood_and_list_changed_storm_do_not_stop_a_call() -> None:
    model = ScriptedModel([reply(tool_call("mcp__h__echo", {"text": "hi"})), reply("done")])
    core = session(model, hostile("flood"))
    try:
        [echoed] = results(await core.prompt("go"))
    finally:
        await core.close()
    assert text_of(echoed) == "echo: hi"


async def test_a_server_that_exits_after_initialize_is_one_failure() -> None:
    model = ScriptedModel([reply(tool_call("mcp__h__echo", {"text": "hi"})), reply("done")])
    core = session(model, hostile("exit"))
    try:
        [echoed] = results(await core.prompt("go"))
        assert core.mcp is not None
        [status] = core.mcp.statuses()
    finally:
        await core.close()
    assert status.status == "failed" and status.error is not None and "Connection closed" in status.error
    assert echoed["isError"]


async def test_a_tool_listed_twice_is_offered_once_and_said() -> None:
    """Each listing of ``echo`` counted as another tool of the same name, so ``echo`` was taken
    for a collision and offered only as ``mcp__h__echo_<hash>`` (the model's call of
    ``mcp__h__echo`` found no tool), with a note that another tool took its name and ``tether
    mcp list`` showing it three times."""
    model = ScriptedModel([reply(tool_call("mcp__h__echo", {"text": "hi"})), reply("done")])
    notices: list[str] = []
    [echoed], status = await prompted(model, hostile("repeats"), notices)
    declared = [t["name"] for t in model.requests[0].context.get("tools") or []]
    assert declared.count("mcp__h__echo") == 1 and len(declared) == len(set(declared))
    assert status.tools == ("mcp__h__echo",) and text_of(echoed) == "echo: hi"
    assert notices == ["MCP server 'h' lists the tool 'echo' more than once: only the first is offered"]


async def test_a_line_without_end_disconnects_the_server_instead_of_filling_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server writing on stdout without ever ending the line was read into one buffer until
    tether's memory ran out (a 300 MB line cost 600 MB), and the call waited for its timeout.
    Past ``MAX_LINE_BYTES`` (made 1 MiB here) the server is disconnected: the call fails at once,
    saying why (it said the server "crashed or exited")."""
    from tether.mcp import stdio

    monkeypatch.setattr(stdio, "MAX_LINE_BYTES", 1 << 20, raising=False)
    model = ScriptedModel([reply(tool_call("mcp__h__echo", {"text": "hi"})), reply("done")])
    [echoed], status = await prompted(model, replace(hostile("endless"), tool_timeout=30))
    assert echoed["isError"] and "stopped during the call to 'echo'" in text_of(echoed)
    # the model and the user are told why, not that the server "crashed or exited"
    why = "it wrote a line over the 1 MiB limit on stdout"
    assert f"({why})" in text_of(echoed)
    assert status.error is not None and status.error.startswith(
        f"disconnected during a call to 'echo': {why}"
    )


async def test_a_start_that_times_out_says_which_answer_it_waited_for() -> None:
    """A server that answered ``initialize`` and never ``tools/list`` was reported as "no
    answer to initialize": the user looked at the wrong end of the server."""
    error = await failure_of(replace(hostile("unlisted"), startup_timeout=8.0))
    assert error.startswith("did not start within 8 s (no answer to tools/list)"), error


async def test_a_listing_without_a_list_of_tools_fails_the_server_saying_so() -> None:
    """``{"tools": {...}}`` was read as no tools: the server was "ready" with none and nothing
    said why its tools were missing."""
    assert "its tools/list answer has no list of tools (tools: dict)" in await failure_of(hostile("unlist"))


def test_the_tool_checks() -> None:
    assert parameters_problem({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}) is None
    assert (
        parameters_problem({"properties": {"a": True}, "$defs": {"x": {"anyOf": [{"type": "integer"}]}}})
        is None
    )
    assert parameters_problem({"type": "object", "properties": {"a": {"items": {"type": "x"}}}}) == (
        "parameters.properties.a.items.type 'x' is not a JSON type"
    )
    assert parameters_problem({"type": "object", "anyOf": {"type": "string"}}) == (
        "parameters.anyOf must be a list of schemas"
    )
    assert parameters_problem("x") == "its parameters must be a JSON Schema object, not str"
    nested: dict[str, object] = {"type": "object"}
    for _ in range(200_000):
        nested = {"type": "object", "properties": {"a": nested}}
    assert parameters_problem(nested) == "its parameters schema is too large"
    assert name_problem("read_file-2") is None
    assert (
        name_problem("x" * 65) is not None
        and name_problem("") is not None
        and name_problem("a.b") is not None
    )


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("prompts_hang", "no answer to prompts/list within its start-up timeout (3 s)"),
        ("prompts_error", "prompts/list failed: MCPError: no prompts/list"),
    ],
)
async def test_a_server_whose_prompts_are_not_listed_keeps_its_tools_and_says_why(
    mode: str, why: str
) -> None:
    """A server that never answered ``prompts/list`` failed whole at its start-up timeout ("no
    answer to prompts/list"), its listed tools with it; one whose list failed lost its prompts
    without a word. Now the tools are offered and one note says why the prompts are not."""
    model = ScriptedModel([reply(tool_call("mcp__h__echo", {"text": "hi"})), reply("done")])
    notices: list[str] = []
    [echoed], status = await prompted(model, replace(hostile(mode), startup_timeout=3.0), notices)
    assert status.status == "ready" and status.tools == ("mcp__h__echo",) and status.prompts == ()
    assert text_of(echoed) == "echo: hi"
    assert notices == [f"MCP server 'h': its prompts are not offered ({why}); its tools are"]


async def test_a_huge_description_is_cut_and_a_huge_schema_left_out_saying_so() -> None:
    """A tool's 5 MB description and another's 100 KB schema went with every model request (and
    into the kept listing); now the description is cut at ``MAX_DESCRIPTION`` characters with a
    line saying so, and the tool whose schema is over ``MAX_SCHEMA_BYTES`` is left out with one
    note naming the server, the tool and the size; the server's other tool works."""
    model = ScriptedModel([reply(tool_call("mcp__h__echo", {"text": "hi"})), reply("done")])
    notices: list[str] = []
    [echoed], status = await prompted(model, hostile("huge"), notices)
    declared = {t["name"]: t for t in model.requests[0].context.get("tools") or []}
    description = declared["mcp__h__echo"]["description"]
    assert description == "x" * 2048 + "\n[description cut at 2048 of its 5000000 characters]"
    assert "mcp__h__big" not in declared and text_of(echoed) == "echo: hi"
    why = "its input schema is 100,071 bytes, over the 65,536-byte limit"
    assert status.tools == ("mcp__h__echo",) and status.left_out == (f"big: {why}",)
    assert notices == [f"MCP server 'h': tools not offered: big ({why})"]


async def test_a_listing_without_its_prompts_is_kept_saying_why() -> None:
    """A start whose ``prompts/list`` failed was kept as a complete listing with no prompts: the
    next session offered the kept tools without starting the server, its prompts gone without
    the note. Now the kept listing says why its prompts are missing, and the next session says
    it again (the server's next start lists them again, as any start does)."""
    first = ScriptedModel([reply(tool_call("mcp__h__echo", {"text": "hi"})), reply("done")])
    why = "prompts/list failed: MCPError: no prompts/list"
    note = f"MCP server 'h': its prompts are not offered ({why}); its tools are"
    notices: list[str] = []
    await prompted(first, hostile("prompts_error"), notices)
    assert notices == [note]
    notices.clear()
    _, status = await prompted(ScriptedModel([reply("done")]), hostile("prompts_error"), notices)
    assert status.status == "stopped" and status.tools == ("mcp__h__echo",)  # the kept listing
    assert notices == [note]
