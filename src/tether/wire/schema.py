"""The JSON Schema (2020-12) bundle of the wire types, generated from their Python definitions.

The Python ``TypedDict``s and aliases are the single source of truth; this module walks them
(never a hand-written schema) and writes one ``$defs`` entry per definition of seed 000
(``reference/seeds/000-wire.txt``), under
the seed's own names and in its order. Definitions refer to each other with ``$ref``;
``description`` comes from the ``Doc`` annotations and docstrings that carry the seed's
``doc(...)`` texts; open records (pydantic ``extra="allow"``) are marked ``"x-open": true``;
discriminated unions are ``oneOf`` with an ``"x-discriminator"`` hint naming the field.

Later layers (the RPC protocol) add their own definitions to the same bundle by passing more
``Registry`` objects, and extra top-level sections (``x-rpc``), to ``build_bundle``.
"""

import json
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

from typing_extensions import is_typeddict

from tether.wire import messages as m, model
from tether.wire.doc import Doc
from tether.wire.records import Tag

JsonSchema = dict[str, Any]

DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True, slots=True)
class Registry:
    """A named, ordered group of wire definitions: seed name -> Python ``TypedDict`` or alias.

    ``name`` (``messageDefs``) only labels errors; the bundle itself is one flat ``$defs``.
    """

    name: str
    definitions: Mapping[str, object]


MESSAGE_DEFS = Registry(
    "messageDefs",  # open records: transcript content, messages, usage, streaming events
    {
        "Attribution": m.Attribution,
        "StopReason": m.StopReason,
        "TextContent": m.TextContent,
        "ThinkingContent": m.ThinkingContent,
        "RedactedThinkingContent": m.RedactedThinkingContent,
        "ImageContent": m.ImageContent,
        "ToolCall": m.ToolCall,
        "FallbackContent": m.FallbackContent,
        "AnthropicServerToolContent": m.AnthropicServerToolContent,
        "UserContent": m.UserContent,
        "MessageContent": m.MessageContent,
        "AssistantContent": m.AssistantContent,
        "UsageCost": m.UsageCost,
        "Usage": m.Usage,
        "ParentIrc": m.ParentIrc,
        "UserMessage": m.UserMessage,
        "DeveloperMessage": m.DeveloperMessage,
        "AssistantMessage": m.AssistantMessage,
        "ToolResultMessage": m.ToolResultMessage,
        "BashExecutionMessage": m.BashExecutionMessage,
        "PythonExecutionMessage": m.PythonExecutionMessage,
        "CustomMessage": m.CustomMessage,
        "HookMessage": m.HookMessage,
        "BranchSummaryMessage": m.BranchSummaryMessage,
        "CompactionSummaryMessage": m.CompactionSummaryMessage,
        "FileMentionItem": m.FileMentionItem,
        "FileMentionMessage": m.FileMentionMessage,
        "AgentMessage": m.AgentMessage,
        "AssistantStartEvent": m.AssistantStartEvent,
        "AssistantTextStartEvent": m.AssistantTextStartEvent,
        "AssistantTextDeltaEvent": m.AssistantTextDeltaEvent,
        "AssistantTextEndEvent": m.AssistantTextEndEvent,
        "AssistantThinkingStartEvent": m.AssistantThinkingStartEvent,
        "AssistantThinkingDeltaEvent": m.AssistantThinkingDeltaEvent,
        "AssistantThinkingEndEvent": m.AssistantThinkingEndEvent,
        "AssistantImageEndEvent": m.AssistantImageEndEvent,
        "AssistantToolCallStartEvent": m.AssistantToolCallStartEvent,
        "AssistantToolCallDeltaEvent": m.AssistantToolCallDeltaEvent,
        "AssistantToolCallEndEvent": m.AssistantToolCallEndEvent,
        "AssistantDoneEvent": m.AssistantDoneEvent,
        "AssistantErrorEvent": m.AssistantErrorEvent,
        "AssistantMessageEvent": m.AssistantMessageEvent,
    },
)

MODEL_DEFS = Registry(
    "modelDefs",  # closed records: model and thinking descriptors
    {
        "Effort": model.Effort,
        "ThinkingLevel": model.ThinkingLevel,
        "ConfiguredThinkingLevel": model.ConfiguredThinkingLevel,
        "ModelCost": model.ModelCost,
        "ThinkingConfig": model.ThinkingConfig,
        "ModelInfo": model.ModelInfo,
    },
)

WIRE_DESCRIPTION = (
    "Wire definitions for transcript content: content blocks, usage, agent messages, assistant "
    "streaming events, and the model descriptor. Every object marked x-open is an open record: "
    "clients check the discriminator (role, type) and pass every other key through, so persisted "
    "messages missing newer fields still decode."
)


def build_bundle(*extra: Registry, sections: Mapping[str, object] | None = None) -> JsonSchema:
    """The bundle of seed 000's definitions, then those of ``extra`` registries, then ``sections``.

    Raises ``ValueError`` for a name defined twice and ``TypeError`` for a type the bundle
    cannot express (such as a ``TypedDict`` no registry names: every object needs a ``$defs``
    entry to be referred to).
    """
    registries = (MESSAGE_DEFS, MODEL_DEFS, *extra)
    names: list[tuple[object, str]] = []
    for registry in registries:
        for name, tp in registry.definitions.items():
            if any(name == known for _, known in names):
                raise ValueError(f"{registry.name}: {name} is defined twice")
            names.append((tp, name))
    walker = _Walker(names)
    defs = {name: walker.definition(name, tp) for r in registries for name, tp in r.definitions.items()}
    bundle: JsonSchema = {
        "$schema": DIALECT,
        "title": "tether wire types",
        "description": WIRE_DESCRIPTION,
        "$defs": defs,
    }
    bundle.update(sections or {})
    return bundle


def bundle_json(*extra: Registry, sections: Mapping[str, object] | None = None) -> str:
    """The bundle as stable, indented JSON text (definitions and keys in declaration order)."""
    return json.dumps(build_bundle(*extra, sections=sections), indent=2, ensure_ascii=False) + "\n"


def summary() -> str:
    """A few lines on what the wire layer defines, for ``make demo``."""
    defs: dict[str, JsonSchema] = build_bundle()["$defs"]

    def tags(union: str, field: str) -> list[str]:
        refs = [cast(str, s["$ref"]).rsplit("/", 1)[1] for s in defs[union]["oneOf"]]
        return [defs[r]["properties"][field]["const"] for r in refs]

    objects = [d for d in defs.values() if d.get("type") == "object"]
    open_count = sum(1 for d in objects if d.get("x-open"))
    roles = tags("AgentMessage", "role")
    blocks = tags("AssistantContent", "type")
    events = tags("AssistantMessageEvent", "type")
    lines = [
        f"tether wire schema (JSON Schema 2020-12): {len(defs)} definitions "
        f"({len(MESSAGE_DEFS.definitions)} messageDefs, {len(MODEL_DEFS.definitions)} modelDefs), "
        f"{len(objects)} records ({open_count} open, {len(objects) - open_count} closed)",
        f"  {len(roles)} message roles: {', '.join(roles)}",
        f"  {len(blocks)} assistant content types: {', '.join(blocks)}",
        f"  {len(events)} assistant event types: {', '.join(events)}",
        f"  stop reasons: {', '.join(defs['StopReason']['enum'])}",
        f"  thinking levels: {', '.join(defs['ConfiguredThinkingLevel']['enum'])}",
    ]
    return "\n".join(lines)


class _Walker:
    """Turns Python type expressions into JSON Schema, referring to registered names by ``$ref``."""

    def __init__(self, names: list[tuple[object, str]]) -> None:
        self._names = names

    def definition(self, name: str, tp: object) -> JsonSchema:
        if is_typeddict(tp):
            return self._record(tp)
        return self._schema(tp, top=True)

    def _ref(self, tp: object) -> str | None:
        # Identity first: two equal aliases (same Literal values) could be named differently.
        for known, name in self._names:
            if known is tp:
                return name
        for known, name in self._names:
            if known == tp:
                return name
        return None

    def _record(self, cls: Any) -> JsonSchema:
        # get_type_hints resolves string annotations (``from __future__ import annotations``) and
        # keeps NotRequired/Required, which ``__required_keys__`` misreads in that case on 3.11.
        hints: dict[str, object] = get_type_hints(cls, include_extras=True)
        total = bool(getattr(cls, "__total__", True))
        required = [
            key
            for key, tp in hints.items()
            if get_origin(tp) is Required or (total and get_origin(tp) is not NotRequired)
        ]
        schema: JsonSchema = {}
        if cls.__doc__:
            schema["description"] = " ".join(cast(str, cls.__doc__).split())
        schema["type"] = "object"
        if _is_open(cls):
            schema["x-open"] = True
        schema["properties"] = {key: self._schema(_strip_required(tp)) for key, tp in hints.items()}
        schema["required"] = required
        return schema

    def _schema(self, tp: object, top: bool = False) -> JsonSchema:
        if not top and (name := self._ref(tp)) is not None:
            return {"$ref": f"#/$defs/{name}"}
        if get_origin(tp) is Annotated:
            inner, *meta = get_args(tp)
            docs = [x.text for x in meta if isinstance(x, Doc)]
            discriminators = [x.key for x in meta if isinstance(x, Tag)]
            schema = self._schema(inner)
            if discriminators and "anyOf" in schema:
                schema = {"oneOf": schema.pop("anyOf"), "x-discriminator": discriminators[0], **schema}
            return {"description": docs[0], **schema} if docs else schema
        if is_typeddict(tp):
            name = cast(str, getattr(tp, "__name__", repr(tp)))
            raise TypeError(f"{name} is not registered: objects must have a $defs entry")
        if tp is Any:
            return {}
        primitive = _PRIMITIVES.get(tp) if isinstance(tp, type) else None
        if primitive is not None:
            return {"type": primitive}
        origin, args = get_origin(tp), get_args(tp)
        if origin is Literal:
            return _literal(args)
        if origin in (Union, types.UnionType):
            return self._union(args)
        if origin is list:
            return {"type": "array", "items": self._schema(args[0])}
        if origin is dict:
            values = args[1] if args else Any
            return (
                {"type": "object"}
                if values is Any
                else {"type": "object", "additionalProperties": self._schema(values)}
            )
        raise TypeError(f"cannot express {tp!r} in JSON Schema")

    def _union(self, members: tuple[object, ...]) -> JsonSchema:
        if int in members and float in members:  # the seed's `number`: integer or not
            members = tuple(x for x in members if x is not int)
        schemas = [self._schema(x) for x in members]
        if len(schemas) == 1:
            return schemas[0]
        if all(list(s) == ["type"] for s in schemas):
            return {"type": [s["type"] for s in schemas]}
        return {"anyOf": schemas}


_PRIMITIVES: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}
_PRIMITIVES[type(None)] = "null"


def _literal(values: tuple[object, ...]) -> JsonSchema:
    kind = "string" if all(isinstance(v, str) for v in values) else None
    head: JsonSchema = {"type": kind} if kind else {}
    if len(values) == 1:
        return {**head, "const": values[0]}
    return {**head, "enum": list(values)}


def _strip_required(tp: object) -> object:
    while get_origin(tp) in (NotRequired, Required):
        tp = get_args(tp)[0]
    return tp


def _is_open(cls: object) -> bool:
    config = cast(Mapping[str, object], getattr(cls, "__pydantic_config__", {}))
    return config.get("extra") == "allow"
