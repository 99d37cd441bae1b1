"""Round 2 of the differential fuzzing: new kinds of input on top of ``generate.py``'s scenarios.

Round 1's sweeps (``generate.py``) stopped finding anything, so this generator draws what round 1
did not: tool parameter schemas built at random (nested objects and arrays, enums, ``anyOf`` /
``oneOf`` unions, ``const``, bounds, string formats and patterns, ``additionalProperties: false``,
integer vs number, optional properties), arguments coerced deep inside them or wrong in several
places at once, richer prior context (thinking + text + several calls, failed and aborted
assistant messages, error results, images, dangling calls), hooks that override everything at
once, responses with several text / thinking blocks and empty chunk lists, call ids reused across
turns, unknown tools mixed into parallel batches. Same contract as round 1 (``generate.py``'s
docstring); names are ``fy-SEED-INDEX``.

    python tests/agent/fuzz/generate2.py                       # the committed corpus (KEPT)
    python tests/agent/fuzz/generate2.py --count 1000 --out DIR --cases CASES.json

``--cases`` also writes every (schema, arguments) pair of the sweep's tool calls, for
``../reference/validation.mjs``, which records the reference's full validation outcome (the
traces keep only an error's first line).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from generate import Gen

HERE = Path(__file__).resolve().parent
SEED = 21

Json = dict[str, Any]

FORMATS = {
    "email": ["a@b.co", "x.y@example.org"],
    "date-time": ["2024-01-02T03:04:05Z", "2020-12-31T23:59:59+01:00"],
    "date": ["2024-01-02", "1999-12-31"],
    "uri": ["https://example.com/a", "file:///tmp/x"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000"],
    "ipv4": ["127.0.0.1", "10.0.0.255"],
}
BAD_FORMATS = ["not it", "", "2024-13-45", "a@", "http//x", "1.2.3"]


class Gen2(Gen):
    """Round 1's generator with round 2's schemas, arguments, context, hooks and responses."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.cases: list[Json] = []

    # -- schemas -------------------------------------------------------------------------------

    def leaf_schema(self) -> Json:
        r = self.rng
        kind = r.randrange(17)
        if kind == 0:
            s: Json = {"type": "integer"}
            if self.chance(0.7):
                s["minimum"] = r.choice([0, 1, -5])
            if self.chance(0.6):
                s["maximum"] = r.choice([10, 100])
            return s
        if kind == 1:
            s = {"type": "number"}
            bound = r.choice(["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf"])
            s[bound] = {"multipleOf": 0.5}.get(
                bound, r.choice([0, 1, 2.5]) if "M" in bound or "m" in bound else 1
            )
            return s
        if kind == 2:
            return {
                "type": "string",
                "enum": r.sample(["fast", "slow", "auto", "5", "true"], r.randint(1, 3)),
            }
        if kind == 3:
            return {"enum": r.sample([1, "two", None, True, 2.5], r.randint(2, 3))}
        if kind == 4:
            return {"const": r.choice(["fixed", 3, True])}
        if kind == 5:
            s = {"type": "string"}
            if self.chance(0.6):
                s["minLength"] = r.choice([1, 2])
            if self.chance(0.6):
                s["maxLength"] = r.choice([5, 12])
            if self.chance(0.3):
                s["pattern"] = "^[a-z ]*$"
            return s
        if kind == 6:
            return {"type": "string", "format": r.choice(list(FORMATS))}
        if kind == 7:
            members = r.sample(
                [
                    {"type": "number"},
                    {"type": "string"},
                    {"type": "boolean"},
                    {"type": "integer"},
                    {"type": "null"},
                ],
                r.randint(2, 3),
            )
            return {r.choice(["anyOf", "oneOf"]): members}
        if kind == 8:
            return {"type": r.sample(["number", "string", "boolean", "null", "integer"], 2)}
        if kind == 9:
            return {"type": "array", "items": {"type": r.choice(["integer", "number", "boolean", "string"])}}
        if kind == 10:
            s = {"type": "array", "items": {"type": "number"}}
            s["minItems" if self.chance(0.5) else "maxItems"] = r.choice([1, 2])
            return s
        if kind == 11:
            return {"type": "object", "additionalProperties": {"type": r.choice(["number", "boolean"])}}
        if kind == 12:
            return {"anyOf": [{"type": "string", "enum": ["none"]}, {"type": "integer", "minimum": 0}]}
        if kind == 13:
            return {"type": "boolean"}
        if kind == 14:
            return {"type": "number"}
        if kind == 15:
            return {"type": "integer"}
        return {"type": "string"}

    def object_schema(self, depth: int) -> Json:
        properties: Json = {}
        for name in self.rng.sample(["a", "b", "c", "d", "e", "f"], self.rng.randint(1, 4)):
            roll = self.rng.random()
            if depth < 2 and roll < 0.15:
                properties[name] = self.object_schema(depth + 1)
            elif depth < 2 and roll < 0.25:
                properties[name] = {"type": "array", "items": self.object_schema(depth + 1)}
            else:
                properties[name] = self.leaf_schema()
        schema: Json = {"type": "object", "properties": properties}
        required = [k for k in properties if self.chance(0.5)]
        if required:
            schema["required"] = required
        if self.chance(0.3):
            schema["additionalProperties"] = False
        return schema

    def make_tools(self) -> None:
        super().make_tools()
        for tool in self.tools:
            if self.chance(0.8):
                tool["parameters"] = self.object_schema(0)

    # -- arguments -----------------------------------------------------------------------------

    def number_in(self, schema: Json, integer: bool) -> int | float:
        low = schema.get("minimum", schema.get("exclusiveMinimum", -5))
        high = schema.get("maximum", schema.get("exclusiveMaximum", 20))
        if "multipleOf" in schema:
            return self.rng.choice([0.5, 1, 3.5, 10])
        value = self.rng.randint(int(low) + 1, int(high) - 1) if int(high) - int(low) > 1 else low
        if not integer and self.chance(0.3):
            value = value + 0.5 if value + 0.5 < high else value
        return value

    def value(self, schema: Json, coerce: bool) -> Any:
        r = self.rng
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return r.choice(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if key in schema:
                member = r.choice(schema[key])
                value = self.value(member, coerce)
                return value
        kind: str | list[str] | None = schema.get("type")
        if isinstance(kind, list):
            return self.value({"type": r.choice(kind)}, coerce)
        if kind in ("number", "integer"):
            number = self.number_in(schema, kind == "integer")
            if coerce and self.chance(0.6):
                return r.choice(
                    [str(number), f" {number} ", f"{number}.0" if isinstance(number, int) else str(number)]
                )
            return number
        if kind == "string":
            if "format" in schema:
                return r.choice(FORMATS[schema["format"]])
            low, high = schema.get("minLength", 0), schema.get("maxLength", 12)
            words = [w for w in ["alpha", "x", "two words", "héllo", "ab", ""] if low <= len(w) <= high]
            if coerce and not words:
                return 7
            return r.choice(words or ["abcd"])
        if kind == "boolean":
            if coerce and self.chance(0.6):
                return r.choice(["true", "false", 1, 0])
            return self.chance(0.5)
        if kind == "null":
            return None
        if kind == "array":
            low, high = schema.get("minItems", 0), schema.get("maxItems", 3)
            return [self.value(schema["items"], coerce) for _ in range(r.randint(low, max(low, high)))]
        if kind == "object":
            if "properties" not in schema and isinstance(schema.get("additionalProperties"), dict):
                return {
                    k: self.value(schema["additionalProperties"], coerce)
                    for k in r.sample("xyz", r.randint(0, 2))
                }
            return self.object_value(schema, coerce)
        return None

    def wrong(self, schema: Json) -> Any:
        """A value that ``schema`` rejects even after coercion (as far as the generator knows)."""
        r = self.rng
        if "const" in schema or "enum" in schema:
            return r.choice(["other", 99, [1]])
        if "anyOf" in schema or "oneOf" in schema:
            rejected: list[object] = [{"x": 1}, [[]], "word"]
            return r.choice(rejected) if "string" not in str(schema) else {"x": 1}
        kind = schema.get("type")
        if isinstance(kind, list):
            return {"x": 1} if "object" not in kind else [1]
        if kind in ("number", "integer"):
            options: list[Any] = ["abc", "1,5", [1], {"n": 1}]
            if "maximum" in schema:
                options.append(schema["maximum"] + 1)
            if "minimum" in schema:
                options.append(str(schema["minimum"] - 3))
            if "exclusiveMinimum" in schema:
                options.append(schema["exclusiveMinimum"])
            if kind == "integer":
                options += ["2.5", 1.5]
            return r.choice(options)
        if kind == "string":
            if "format" in schema:
                return r.choice(BAD_FORMATS)
            options = [{"s": 1}, ["a"]]
            if "maxLength" in schema:
                options.append("x" * (schema["maxLength"] + 1))
            if "minLength" in schema:
                options.append("")
            if "pattern" in schema:
                options.append("UPPER")
            return r.choice(options)
        if kind == "boolean":
            return r.choice(["yes", "TRUE", 2, "1"])
        if kind == "array":
            if "minItems" in schema:
                return []
            return r.choice(["not an array", [{"deep": [1]}], 5])
        if kind == "object":
            return r.choice(["not an object", [1], 3])
        return {"x": 1}

    def invalid_value(self, schema: Json) -> Json:
        """Arguments wrong in one to three places, some deep inside."""
        args = self.object_value(schema, coerce=self.chance(0.5))
        for _ in range(self.rng.choice([1, 1, 2, 3])):
            self.corrupt(args, schema)
        return args

    def corrupt(self, args: Json, schema: Json) -> None:
        properties: Json = schema.get("properties", {})
        required: list[str] = schema.get("required", [])
        roll = self.rng.random()
        if roll < 0.2 and required:
            args.pop(self.rng.choice(required), None)
            return
        if roll < 0.35 and schema.get("additionalProperties") is False:
            args[self.rng.choice(["zz", "extra"])] = self.rng.choice([1, "x"])
            return
        if not properties:
            args["q"] = {"x": 1}
            return
        key = self.rng.choice(list(properties))
        sub = properties[key]
        if sub.get("type") == "object" and "properties" in sub and isinstance(args.get(key), dict):
            self.corrupt(args[key], sub)
        elif (
            sub.get("type") == "array"
            and isinstance(sub.get("items"), dict)
            and isinstance(args.get(key), list)
            and args[key]
        ):
            items = sub["items"]
            index = self.rng.randrange(len(args[key]))
            if items.get("type") == "object" and isinstance(args[key][index], dict) and "properties" in items:
                self.corrupt(args[key][index], items)
            else:
                args[key][index] = self.wrong(items)
        else:
            args[key] = self.wrong(sub)

    def tool_calls(self) -> list[Json]:
        calls = super().tool_calls()
        by_name = {t["name"]: t for t in self.tools}
        for call in calls:
            tool = by_name.get(call["name"])
            if tool is not None:
                self.cases.append(
                    {
                        "schema": tool.get("parameters", {"type": "object", "properties": {}}),
                        "args": call["arguments"],
                    }
                )
        return calls

    # -- responses -----------------------------------------------------------------------------

    def prose(self, thinking: bool) -> list[Json]:
        if not self.chance(0.35):
            return super().prose(thinking)
        blocks: list[Json] = []
        for _ in range(self.rng.randint(2, 4)):
            kind = self.rng.choice(["text", "thinking"])
            roll = self.rng.random()
            if roll < 0.2:
                blocks.append({"type": kind, "chunks": []})
            elif roll < 0.35:
                blocks.append({"type": kind, kind: self.word()})
            else:
                blocks.append({"type": kind, "chunks": self.chunks()})
        return blocks

    def response(self, final: bool) -> Json:
        response = super().response(final)
        calls = [b for b in response["content"] if b["type"] == "toolCall"]
        if calls and self.chance(0.3):
            # Thinking and text interleaved with the calls.
            index = self.rng.randrange(len(response["content"]) + 1)
            response["content"].insert(
                index, {"type": self.rng.choice(["text", "thinking"]), "chunks": self.chunks()}
            )
        if calls and self.chance(0.15) and self.next_id > 4:
            # A call id that an earlier turn used already (tie-freedom is per batch, ids per turn).
            calls[0]["id"] = f"c{self.rng.randint(1, 3)}"
            if len({c["id"] for c in calls}) < len(calls):
                calls[0]["id"] = f"r{self.next_id}"
        return response

    # -- context -------------------------------------------------------------------------------

    def context(self, ends_open: bool) -> list[Json]:
        if self.chance(0.4):
            return super().context(ends_open)
        r = self.rng
        messages: list[Json] = [{"role": "user", "content": "earlier " + self.word()}]
        for turn in range(r.randint(1, 3)):
            blocks: list[Json] = []
            if self.chance(0.5):
                blocks.append({"type": "thinking", "thinking": "considering " + self.word()})
            if self.chance(0.6):
                blocks.append({"type": "text", "text": "I will " + self.word()})
            calls: list[Json] = []
            for i in range(r.randint(0, 3)):
                tool = r.choice(self.tools)
                name = tool["name"] if self.chance(0.85) else r.choice(["gone", "old_tool"])
                calls.append(
                    {"type": "toolCall", "id": f"p{turn}-{i}", "name": name, "arguments": {"q": self.word()}}
                )
            blocks += calls
            stop = r.choice(
                ["toolUse" if calls else "stop", "error", "aborted", "length"]
                if self.chance(0.3)
                else ["toolUse" if calls else "stop"]
            )
            assistant: Json = {"role": "assistant", "content": blocks, "stopReason": stop}
            if stop in ("error", "aborted"):
                assistant["errorMessage"] = "earlier " + stop
            messages.append(assistant)
            for call in calls:
                if self.chance(0.2):
                    continue  # a dangling call: no result
                result: Json = {
                    "role": "toolResult",
                    "toolCallId": call["id"],
                    "toolName": call["name"],
                    "content": [{"type": "text", "text": "result of " + call["id"]}],
                }
                if self.chance(0.25):
                    result["isError"] = True
                if self.chance(0.15):
                    result["content"].append(
                        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
                    )
                messages.append(result)
            if self.chance(0.5) or turn == 0:
                content: Any = "next " + self.word()
                if self.chance(0.3):
                    content = [
                        {"type": "text", "text": "see"},
                        {
                            "type": "image",
                            "data": "iVBORw0KGgo=",
                            "mimeType": r.choice(["image/png", "image/jpeg"]),
                        },
                    ]
                messages.append({"role": "user", "content": content})
        if messages[-1]["role"] == "assistant" and ends_open:
            messages.append({"role": "user", "content": "go on"})
        return messages

    # -- hooks ---------------------------------------------------------------------------------

    def hooks(self, responses: list[Json]) -> Json:
        hooks = super().hooks(responses)
        ids = sorted({b["id"] for r in responses for b in r["content"] if b["type"] == "toolCall"})
        if ids and self.chance(0.25):
            after = hooks.setdefault("after", {})
            for i in self.rng.sample(ids, min(len(ids), 2)):
                after[i] = {
                    "content": self.rng.choice([[], ["all replaced"], ["x", "y", "z"]]),
                    "isError": self.chance(0.5),
                    "terminate": self.chance(0.6),
                }
        if ids and self.chance(0.15):
            hooks.setdefault("block", {})[self.rng.choice(ids)] = None
        if self.chance(0.15):
            hooks["stopAfterTurns"] = sorted(self.rng.sample([1, 2, 3, 4, 5], self.rng.randint(1, 4)))
        if self.chance(0.15):
            hooks["keepLastMessages"] = self.rng.choice([0, 1, 1, 2])
        return hooks


def generate(seed: int, index: int) -> tuple[Json, list[Json]]:
    gen = Gen2(random.Random(f"fy-{seed}-{index}"))
    return gen.scenario(f"fy-{seed}-{index:04d}"), gen.cases


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--count", type=int, help="write fy-SEED-0000 .. COUNT-1 instead of the kept corpus")
    parser.add_argument("--out", type=Path, default=HERE / "scenarios")
    parser.add_argument("--cases", type=Path, help="also write the (schema, arguments) pairs here")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    indices = range(args.count) if args.count is not None else KEPT
    cases: list[Json] = []
    for index in indices:
        scenario, scenario_cases = generate(args.seed, index)
        cases += scenario_cases
        (args.out / f"{scenario['name']}.json").write_text(
            json.dumps(scenario, indent=1, ensure_ascii=False) + "\n"
        )
    if args.cases is not None:
        args.cases.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")


FOUND_BUGS = {"string formats": [17, 65, 94, 542]}
"""Indices (seed 21) of the scenarios that failed before the fix named in ../../README.md."""

KEPT: list[int] = [
    17,
    24,
    28,
    36,
    57,
    65,
    86,
    93,
    94,
    139,
    162,
    165,
    168,
    173,
    177,
    180,
    181,
    186,
    217,
    236,
    241,
    255,
    257,
    274,
    285,
    315,
    326,
    332,
    359,
    362,
    368,
    369,
    370,
    372,
    380,
    389,
    402,
    409,
    424,
    433,
    441,
    455,
    456,
    465,
    467,
    472,
    476,
    501,
    510,
    512,
    514,
    521,
    522,
    526,
    527,
    537,
    538,
    542,
    543,
    557,
    570,
    573,
    581,
    595,
]
"""The committed corpus (seed 21): ``FOUND_BUGS`` and a random sample of a 600-scenario sweep."""


if __name__ == "__main__":
    main()
