"""Tool definitions for the agent runtime (``AgentTool`` and ``AgentToolResult`` of
``reference/seeds/001-agent-loop.txt``).

A tool's parameters are either a pydantic model class or a JSON Schema dict. ``execute`` raises
to fail; the loop turns the exception into an error tool result (``isError: true``) with the
exception's message as text, exactly as the reference does.

``@tool`` builds an ``AgentTool`` from a typed function (async, or plain: run in a thread); ``tool_schema`` is what the model
is sent for a tool (name, description, JSON Schema of the arguments).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import threading
import types
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, get_type_hints, overload

from tether.ai.abort import AbortSignal

if TYPE_CHECKING:  # pydantic loads when a model-based tool is built or validated, not before
    from pydantic import BaseModel

    from tether.ai.types import Tool
    from tether.wire import ImageContent, TextContent

ToolExecutionMode = Literal["sequential", "parallel"]
"""``sequential``: one call at a time; ``parallel``: prepared in order, executed concurrently."""

D = TypeVar("D")
T = TypeVar("T")


@dataclass(slots=True)
class AgentToolResult(Generic[D]):
    """Final or partial result of a tool: content for the model, details for logs and UIs."""

    content: list[TextContent | ImageContent]
    details: D | None = None
    terminate: bool | None = None
    """Hint to stop after this tool batch; honoured only when every result of the batch sets it."""


ToolUpdate = Callable[[AgentToolResult[Any]], None]
"""Callback a tool calls with partial results while it runs (``tool_execution_update``)."""

ToolExecute = Callable[
    [str, Any, AbortSignal | None, ToolUpdate | None],
    Awaitable[AgentToolResult[Any]],
]
"""``execute(tool_call_id, params, signal, on_update)``; ``params`` are the validated arguments
(a pydantic model instance when ``parameters`` is a model class, else a dict)."""


@dataclass(slots=True)
class AgentTool:
    """A tool the agent can call."""

    name: str
    label: str
    description: str
    parameters: type[BaseModel] | dict[str, Any]
    execute: ToolExecute
    execution_mode: ToolExecutionMode | None = None
    """Per-tool override of the loop's execution mode; ``None`` follows the loop."""
    prepare_arguments: Callable[[Any], Any] | None = None
    """Compatibility shim applied to raw arguments before validation."""
    metadata: dict[str, Any] = field(default_factory=lambda: {})
    arguments_check: tuple[object, Callable[[Any], Any]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """The check of a call's arguments (``validation.arguments_validator``) and the parameters it
    was made for: made with the tool's first call and kept with the tool, so each call reads it
    here instead of looking it up. A tool given new parameters gets a new check."""


def one_per_name(tools: Iterable[AgentTool]) -> list[AgentTool]:
    """``tools`` with each name once: a later tool takes the place of an earlier one of its name
    (as ``create_agent_session`` does with your ``extra_tools`` over the built-in ones, and as
    pi does). Both would otherwise reach the model, which a provider refuses (Anthropic: "tool
    names must be unique"), and only the later one would run. Done where tools are set, so a
    run pays nothing for it."""
    at: dict[str, int] = {}
    kept: list[AgentTool] = []
    for each in cast("Iterable[object]", tools):  # as given, not as typed: checked below
        if isinstance(each, MethodTool):  # ``Class.method``: nothing to bind ``self`` to
            raise TypeError(f"@tool method {each.qualname}: take it from an instance (obj.{each.attribute})")
        if not isinstance(each, AgentTool):  # a function without ``@tool``, a name
            raise TypeError(f"{each!r} is not a tool: make one with @tether.tool (an AgentTool)")
        if each.name in at:
            kept[at[each.name]] = each
        else:
            at[each.name] = len(kept)
            kept.append(each)
    return kept


# -- the @tool decorator ----------------------------------------------------------------------

INJECTED_PARAMETERS = frozenset({"tool_call_id", "signal", "on_update"})
"""Parameter names the loop fills in instead of the model: the call's id, the run's abort
signal and the partial-result callback. Every other parameter is an argument for the model."""

ToolFunction = Callable[..., Awaitable[Any]] | Callable[..., Any]
"""An async function, or a plain one (run in a worker thread, so it cannot block the loop)."""


@overload
def tool(fn: ToolFunction, /) -> AgentTool: ...
@overload
def tool(
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
) -> Callable[[ToolFunction], AgentTool]: ...
def tool(
    fn: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
) -> AgentTool | Callable[[ToolFunction], AgentTool]:
    """Build an ``AgentTool`` from a typed function, async or plain.

    The parameters (minus ``tool_call_id``, ``signal`` and ``on_update``, which are injected when
    declared) become a pydantic model, so type hints, defaults and ``Annotated[..., Field(...)]``
    describe the arguments to the model. The docstring is the description. The function returns
    a ``str`` (one text block), an ``AgentToolResult``, or any other value (sent as JSON text);
    it raises to fail. A plain (sync) function runs in a worker thread, so a slow one does not
    stall other tools or the stream.

    On abort, a tool that declares ``signal`` should stop (``signal.aborted``, ``await
    signal.wait()``, ``signal.add_listener``) and raise; a tool that returns within
    ``ABORT_GRACE`` (1 s) of the abort has its result recorded as usual. One still running then
    is left behind (an async one is cancelled; a plain function's thread cannot be, and runs to
    its end, without keeping the program from exiting), its call ends as an error result ("Tool execution was aborted ...") and whatever it
    returns later is dropped, never recorded.

        @tool
        async def add(a: int, b: int) -> str:
            \"\"\"Add two integers.\"\"\"
            return str(a + b)
    """

    def build(function: ToolFunction) -> AgentTool:
        if isinstance(function, staticmethod):
            function = cast(ToolFunction, function.__func__)
        if isinstance(function, classmethod):
            method = cast(ToolFunction, cast(Any, function).__func__)
            return cast(AgentTool, MethodTool(method, True, name, label, description, execution_mode))
        if _is_method(function):
            return cast(AgentTool, MethodTool(function, False, name, label, description, execution_mode))
        return _tool_from_function(function, name, label, description, execution_mode)

    return build if fn is None else build(fn)


def _is_method(fn: ToolFunction) -> bool:
    """Whether ``fn`` is an instance method being defined: a function of a class body (its
    qualified name says so) whose first parameter is ``self``."""
    outer = fn.__qualname__.split(".")[-2:-1]
    if not outer or outer[0] == "<locals>":
        return False
    first = next(iter(inspect.signature(fn).parameters), None)
    return first == "self"


class MethodTool:
    """``@tool`` on a method: ``obj.search`` is the tool of ``search`` bound to ``obj``.

    Inside a class body the decorator sees a plain function whose ``self`` would otherwise be an
    argument the model has to invent (and nothing would bind it). So the decorator returns this
    descriptor instead, and reading the attribute on an instance builds the tool from the bound
    method, once per instance (it is kept in the instance's ``__dict__``, so ``obj.search is
    obj.search``); each instance's tool works on that instance's state. A ``classmethod`` binds
    to the class it is read from. Passing a bound method, ``tool(obj.search)``, as with
    pydantic-ai's ``Tool`` and the Agents SDK's ``function_tool``, works too."""

    def __init__(
        self,
        fn: ToolFunction,
        of_class: bool,
        name: str | None,
        label: str | None,
        description: str | None,
        execution_mode: ToolExecutionMode | None,
    ) -> None:
        self._function = fn
        self._of_class = of_class
        """A ``classmethod``'s function: bound to the class it is read from."""
        self._options = (name, label, description, execution_mode)
        self._per_class: dict[type, AgentTool] = {}
        self.attribute = self._function.__name__
        self.qualname = self._function.__qualname__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    def __get__(self, instance: object, owner: type | None = None) -> AgentTool | MethodTool:
        if self._of_class:
            cls = owner if owner is not None else type(instance)
            made = self._per_class.get(cls)
            if made is None:
                made = self._per_class[cls] = self._bind(cls)
            return made
        if instance is None:  # ``Class.method``: the descriptor itself
            return self
        made = self._bind(instance)
        with contextlib.suppress(AttributeError):  # a class with __slots__: made at each access
            instance.__dict__[self.attribute] = made
        return made

    def _bind(self, receiver: object) -> AgentTool:
        return _tool_from_function(types.MethodType(self._function, receiver), *self._options)


def _tool_from_function(
    fn: ToolFunction,
    name: str | None,
    label: str | None,
    description: str | None,
    execution_mode: ToolExecutionMode | None,
) -> AgentTool:
    is_async = inspect.iscoroutinefunction(fn)
    tool_name = name or fn.__name__
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:  # e.g. a hint naming a class local to another function
        raise TypeError(
            f"@tool {tool_name}: cannot resolve the type hints of {fn.__qualname__}: {exc}"
        ) from exc
    fields: dict[str, Any] = {}
    injected: list[str] = []
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.name in INJECTED_PARAMETERS:
            injected.append(parameter.name)
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"@tool {tool_name}: *args and **kwargs cannot be tool arguments")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (hints.get(parameter.name, Any), default)
    from pydantic import create_model

    model_name = "".join(part.capitalize() for part in tool_name.split("_")) + "Arguments"
    parameters: type[BaseModel] = create_model(model_name, **fields)

    async def execute(
        tool_call_id: str, params: Any, signal: AbortSignal | None, on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        kwargs: dict[str, Any] = dict(params)
        available = {"tool_call_id": tool_call_id, "signal": signal, "on_update": on_update}
        for key in injected:
            kwargs[key] = available[key]
        if is_async:
            return as_tool_result(await fn(**kwargs))
        return as_tool_result(await in_daemon_thread(fn, kwargs))

    return AgentTool(
        name=tool_name,
        label=label or tool_name,
        description=description if description is not None else inspect.getdoc(fn) or "",
        parameters=parameters,
        execute=execute,
        execution_mode=execution_mode,
    )


async def in_daemon_thread(fn: Callable[..., T], kwargs: dict[str, Any]) -> T:
    """``fn(**kwargs)`` in a thread of its own, awaited; the caller's context variables go along,
    as with ``asyncio.to_thread``.

    Not a ``to_thread`` worker: ``asyncio.run`` and the interpreter's exit wait for those, so a
    plain tool the run left behind after an abort (Python cannot stop a thread) would hold the
    whole program open until it returned, which may be never. A daemon thread is left to itself;
    what it returns once nobody waits is dropped."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: T | None, error: BaseException | None) -> None:
        if future.done():  # the caller gave up on it
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(cast(T, value))

    def run() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = context.run(fn, **kwargs)
        except StopIteration as exc:  # a future refuses it (and the call would never settle)
            error = RuntimeError(f"{getattr(fn, '__name__', 'the tool')} raised StopIteration")
            error.__cause__ = exc
        except BaseException as exc:  # handed to the awaiting task, as to_thread does
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=run, name=f"tool {getattr(fn, '__name__', 'function')}", daemon=True).start()
    return await future


def as_tool_result(value: object) -> AgentToolResult[Any]:
    """A tool function's return value as a result: text as is, anything else as JSON text."""
    if isinstance(value, AgentToolResult):
        return cast(AgentToolResult[Any], value)
    if isinstance(value, str):
        text = value
    else:
        import pydantic_core

        text = pydantic_core.to_json(value).decode()
    return AgentToolResult(content=[{"type": "text", "text": text}])


# -- what the model sees ------------------------------------------------------------------------


def tool_schema(agent_tool: AgentTool) -> Tool:
    """The tool as sent to the model: name, description and the JSON Schema of its arguments."""
    parameters = agent_tool.parameters
    schema = parameters if isinstance(parameters, dict) else _model_schema(parameters)
    return {"name": agent_tool.name, "description": agent_tool.description, "parameters": schema}


@functools.lru_cache(maxsize=256)
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()
