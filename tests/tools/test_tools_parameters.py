"""Each built-in tool states its arguments twice: a JSON Schema (what the model is sent and what
calls are checked against) and a ``TypedDict`` (what the tool's code reads). They must agree. (The tool modules do without
``from __future__ import annotations``: with it, Python 3.11 cannot see ``NotRequired`` and
would count every key as required.)"""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest

from tether import tools
from tether.tools.bash import SANDBOXED_BASH_PARAMETERS

PAIRS = [
    (tools.BashParams, SANDBOXED_BASH_PARAMETERS),
    (tools.EditParams, tools.EDIT_PARAMETERS),
    (tools.FindParams, tools.FIND_PARAMETERS),
    (tools.GrepParams, tools.GREP_PARAMETERS),
    (tools.LsParams, tools.LS_PARAMETERS),
    (tools.ReadParams, tools.READ_PARAMETERS),
    (tools.WriteParams, tools.WRITE_PARAMETERS),
]

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _json_types(hint: Any) -> set[str]:
    members = getattr(hint, "__args__", None) or (hint,)
    return {JSON_TYPES[member] for member in members}


@pytest.mark.parametrize(("params", "schema"), PAIRS, ids=[p.__name__ for p, _ in PAIRS])
def test_typed_dict_and_schema_agree(params: Any, schema: dict[str, Any]) -> None:
    hints = get_type_hints(params)
    assert set(hints) == set(schema["properties"])
    assert params.__required_keys__ == set(schema.get("required", []))
    assert schema["additionalProperties"] is False
    for key, hint in hints.items():
        declared = schema["properties"][key]["type"]
        assert _json_types(hint) == ({declared} if isinstance(declared, str) else set(declared)), key
