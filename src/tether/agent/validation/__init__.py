"""tether.agent.validation: a tool call's arguments checked as the reference checks them.

The reference (pi-agent-core, through pi-ai and TypeBox) coerces primitives towards the schema,
validates, and on failure tells the model what was wrong in TypeBox's words; a model's call must
get the same verdict, the same coerced arguments and the same error text here. This package is
that behaviour behind one entry point; its modules are private:

- ``_validate``: the entry functions and ``ToolArgumentsError``'s text;
- ``_compiled``: each schema compiled once (fast check, ``jsonschema`` validator), cached;
- ``_coercion``: the reference's primitive coercion (``"5"`` to ``5``, ...);
- ``_js``: JavaScript's parsing and printing of numbers, and its JSON text;
- ``_schema_check``: a compiled fast check for the schemas tools use in practice;
- ``_errors``: the problems of a failed call, in TypeBox's order and wording;
- ``_formats``: TypeBox's string formats (``email``, ``date-time``, ...).

Names load on first use (module ``__getattr__``), like the other packages': ``js_number_text``
does not load the validators, and the format patterns and the error wording load only when a call
needs them, so ``tether -p`` does not pay for them at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.agent.validation._js import js_number_text as js_number_text
    from tether.agent.validation._validate import (
        ArgumentsValidator as ArgumentsValidator,
        ToolArgumentsError as ToolArgumentsError,
        arguments_validator as arguments_validator,
        validate_json_arguments as validate_json_arguments,
        validate_tool_arguments as validate_tool_arguments,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())


__all__ = [
    "ArgumentsValidator",
    "ToolArgumentsError",
    "arguments_validator",
    "js_number_text",
    "validate_json_arguments",
    "validate_tool_arguments",
]
