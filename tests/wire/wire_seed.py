"""A reader for seed 000 (``reference/seeds/000-wire.txt``), independent of tether's own definitions.

The seed is a TypeScript module whose ``messageDefs`` and ``modelDefs`` objects map each
definition name to a type expression string (``"'user' | 'agent'"``, ``"UserContent[]"``), an
object of such fields (a ``?`` suffix marks an optional key), or ``doc(value, text)``. Tests use
this reader as the oracle: the schema bundle, the discriminator sets and the generated test data
all come from the seed text, so a drift in tether's Python definitions shows up as a failure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import cast

from reference_paths import WIRE_SEED


@dataclass(frozen=True)
class Field:
    name: str
    optional: bool
    expr: str
    doc: str | None


@dataclass(frozen=True)
class Definition:
    name: str
    group: str  # "messageDefs" or "modelDefs"
    expr: str | None  # a type expression, or None for an object
    fields: tuple[Field, ...]
    doc: str | None

    @property
    def is_object(self) -> bool:
        return self.expr is None


@dataclass(frozen=True)
class Doc:
    value: object
    text: str


_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|([A-Za-z_$][\w$]*)|([{}(),:]))')


class _Parser:
    def __init__(self, text: str, constants: dict[str, str]) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text) and text[pos:].strip():
            match = _TOKEN.match(text, pos)
            if match is None:
                raise ValueError(f"seed: cannot read {text[pos : pos + 40]!r}")
            string, ident, punct = match.groups()
            self.tokens.append(
                ("str", json.loads(string)) if string else ("id", ident) if ident else ("p", punct)
            )
            pos = match.end()
        self.i = 0
        self.constants = constants

    def take(self, expected: str | None = None) -> tuple[str, str]:
        token = self.tokens[self.i]
        if expected is not None and token[1] != expected:
            raise ValueError(f"seed: expected {expected!r}, found {token[1]!r}")
        self.i += 1
        return token

    def value(self) -> object:
        kind, text = self.take()
        if kind == "str":
            return text
        if kind == "id" and text == "doc":
            self.take("(")
            inner = self.value()
            self.take(",")
            doc = self.take()[1]
            if self.tokens[self.i][1] == ",":  # trailing comma
                self.take(",")
            self.take(")")
            return Doc(inner, doc)
        if kind == "id":
            return self.constants[text]
        if text == "{":
            fields: dict[str, object] = {}
            while self.tokens[self.i][1] != "}":
                key = self.take()[1]
                self.take(":")
                fields[key] = self.value()
                if self.tokens[self.i][1] == ",":
                    self.take(",")
            self.take("}")
            return fields
        raise ValueError(f"seed: unexpected {text!r}")


def _object_source(text: str, name: str) -> str:
    start = text.index(f"export const {name} = ") + len(f"export const {name} = ")
    end = text.index("satisfies WireDefs", start)
    return text[start:end]


@cache
def seed_text() -> str:
    return WIRE_SEED.read_text(encoding="utf-8")


@cache
def definitions() -> tuple[Definition, ...]:
    """Every definition of seed 000, in the seed's order (messageDefs, then modelDefs)."""
    text = re.sub(r"/\*.*?\*/", "", seed_text(), flags=re.S)
    constants = dict(re.findall(r'const (\w+) = "([^"]*)";', text))
    out: list[Definition] = []
    for group in ("messageDefs", "modelDefs"):
        parsed = _Parser(_object_source(text, group), constants).value()
        assert isinstance(parsed, dict)
        for name, raw in cast(dict[str, object], parsed).items():
            doc = raw.text if isinstance(raw, Doc) else None
            body = raw.value if isinstance(raw, Doc) else raw
            if isinstance(body, str):
                out.append(Definition(name, group, body, (), doc))
                continue
            assert isinstance(body, dict)
            fields: list[Field] = []
            for key, spec in cast(dict[str, object], body).items():
                field_doc = spec.text if isinstance(spec, Doc) else None
                expr = spec.value if isinstance(spec, Doc) else spec
                assert isinstance(expr, str)
                fields.append(Field(key.removesuffix("?"), key.endswith("?"), expr, field_doc))
            out.append(Definition(name, group, None, tuple(fields), doc))
    return tuple(out)


def by_name() -> dict[str, Definition]:
    return {d.name: d for d in definitions()}


def members(expr: str) -> list[str]:
    """The alternatives of a union expression: ``"'a' | 'b'"`` -> ``["'a'", "'b'"]``."""
    return [part.strip() for part in expr.split("|")]


def literals(expr: str) -> list[str]:
    """The string values of a literal union: ``"'a' | 'b'"`` -> ``["a", "b"]``."""
    values = members(expr)
    assert all(v.startswith("'") and v.endswith("'") for v in values), expr
    return [v[1:-1] for v in values]


def tag_values(union: str, field: str) -> list[str]:
    """The discriminator values of a union of records, from each member's ``field`` literal."""
    defs = by_name()
    union_expr = defs[union].expr
    assert union_expr is not None
    out: list[str] = []
    for member in members(union_expr):
        (tag,) = [f for f in defs[member].fields if f.name == field]
        out.extend(literals(tag.expr))
    return out
