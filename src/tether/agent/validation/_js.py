"""JavaScript's numbers and JSON text, which the reference's coercion and error text follow.

Python parses and prints numbers differently: JavaScript's ``Number("0x1f")`` is 31 and its
``String(1e-7)`` is ``1e-7``, and it has one number type, so an integral ``5.0`` prints as ``5``.
Coercion, the error wording and the arguments shown to the model use these to match the reference
character for character.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, cast

_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")
_INFINITY = {"Infinity": math.inf, "+Infinity": math.inf, "-Infinity": -math.inf}


def js_number(text: str) -> float | None:
    """JavaScript's ``Number(text)``; ``None`` where JavaScript gives ``NaN``."""
    stripped = text.strip()
    if stripped == "":
        return 0.0
    if _DECIMAL.fullmatch(stripped):
        return float(stripped)
    if _RADIX.fullmatch(stripped):
        return float(int(stripped, 0))
    return _INFINITY.get(stripped)


def js_number_to_python(value: float) -> int | float:
    """JavaScript has one number type; an integral one must print as ``5``, not ``5.0``."""
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def js_string(value: bool | int | float) -> str:
    """JavaScript's ``String(value)`` for booleans and finite numbers."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return js_number_text(value)


def js_number_text(value: int | float) -> str:
    """How JavaScript prints a finite number (``Number.prototype.toString``, also ``JSON.stringify``).

    Python's ``repr`` finds the same shortest digits but places the point differently: JavaScript
    writes ``1e-7`` (not ``1e-07``), ``0.00001`` (not ``1e-05``) and ``1e+21`` only from 10**21 on.
    An ``int`` is a JavaScript number too: past 2**53 it is rounded like one."""
    if isinstance(value, int) and abs(value) < 2**53:
        return str(value)
    number = float(value)
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    mantissa, _, exponent_text = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction.rstrip("0")).lstrip("0") if fraction != "0" else whole.lstrip("0")
    # abs(number) == 0.DIGITS * 10**point
    point = len(whole) + (int(exponent_text) if exponent_text else 0)
    if whole == "0":  # 0.000ddd: the leading zeros of the fraction move the point left
        point = -(len(fraction) - len(fraction.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    count = len(digits)
    if count <= point <= 21:
        return sign + digits + "0" * (point - count)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    exponent = point - 1
    head = digits[0] + ("." + digits[1:] if count > 1 else "")
    return f"{sign}{head}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def is_number(value: object) -> bool:
    """A JavaScript number: in Python ``True`` is an ``int`` too."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def js_json(value: Any, indent: str) -> str:
    """``JSON.stringify(value, null, 2)``: the reference shows the arguments so, numbers as
    JavaScript prints them (``10``, not ``10.0``)."""
    inner = indent + "  "
    if isinstance(value, dict):
        items = cast(dict[str, Any], value)
        if not items:
            return "{}"
        body = ",\n".join(
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {js_json(v, inner)}" for k, v in items.items()
        )
        return f"{{\n{body}\n{indent}}}"
    if isinstance(value, list):
        elements = cast(list[Any], value)
        if not elements:
            return "[]"
        body = ",\n".join(f"{inner}{js_json(v, inner)}" for v in elements)
        return f"[\n{body}\n{indent}]"
    if is_number(value):
        return js_number_text(value) if value == value and abs(value) != float("inf") else "null"
    return json.dumps(value, ensure_ascii=False, default=str)
