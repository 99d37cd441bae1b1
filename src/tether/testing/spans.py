"""Finished OpenTelemetry spans as an indented tree: for tests, the docs and a quick look at a run.

    exporter = InMemorySpanExporter()   # opentelemetry.sdk.trace.export.in_memory_span_exporter
    ...
    print(span_tree(exporter.get_finished_spans()))

Each line is ``name  KIND  status`` then the chosen attributes; children are indented under
their parent and ordered by start time (parallel tool calls appear in the order they started).
Needs the OpenTelemetry SDK (the ``otel`` extra), which only the caller's spans bring.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan


_LONG = frozenset({"exception.stacktrace", "exception.escaped"})
"""Event attributes left out of a line: a traceback does not fit in one."""


def span_tree(spans: Sequence[ReadableSpan], attributes: Collection[str] = ()) -> str:
    """The spans as a tree; ``attributes``: the attribute keys to show (all when empty)."""
    ids = {span.context.span_id for span in spans if span.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
            lines.append("  " * depth + _line(span, attributes))
            for event in span.events:
                shown = _shown({k: v for k, v in (event.attributes or {}).items() if k not in _LONG}, ())
                lines.append("  " * (depth + 1) + f"· event {event.name} {shown}")
            if span.context is not None:
                walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)


def _line(span: ReadableSpan, keys: Collection[str]) -> str:
    status = span.status.status_code.name
    if span.status.description:
        status += f" ({span.status.description})"
    shown = _shown(dict(span.attributes or {}), keys)
    return f"{span.name}  {span.kind.name}  {status}" + (f"  {shown}" if shown else "")


def _shown(attributes: dict[str, object], keys: Collection[str]) -> str:
    items = [(key, value) for key, value in attributes.items() if not keys or key in keys]
    return " ".join(f"{key}={_value(value)}" for key, value in items)


def _value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, tuple):
        return "[" + ",".join(map(str, cast("tuple[object, ...]", value))) + "]"
    return str(value)
