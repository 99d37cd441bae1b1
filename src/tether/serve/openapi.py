"""The OpenAPI 3.1 document of the API, written out by hand: the routes are few and each answer's
shape is stated once here, where a client's author reads it (``GET /openapi.json``)."""

from __future__ import annotations

from typing import Any

from tether._version import __version__

_ERROR = {"$ref": "#/components/schemas/Error"}
_RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
_SESSION_ID = {"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    reasons = {
        400: "Malformed request (not JSON, unknown Last-Event-ID)",
        401: "No token, or a wrong one",
        403: "A read-only token on a route that changes something",
        404: "No such session",
        409: (
            "The session is running, written by another process, recorded in a folder this server "
            "does not run it in (gone, or outside the server's folder), or an extension cancelled "
            "the change"
        ),
        422: "A field is missing or invalid",
        429: "Too many prompts for this token",
        501: "Durable runs are not set up on this server",
        503: "Too many follow streams open, or the durable database failed",
    }
    return {str(code): _json(_ERROR, reasons[code]) for code in codes}


def _op(
    summary: str, ok: dict[str, Any], *errors: int, body: str | None = None, path: bool = True
) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {"200": ok, **_errors(401, *errors)}}
    if path:
        op["parameters"] = [_SESSION_ID]
    if body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}},
        }
    return op


def openapi_document() -> dict[str, Any]:
    accepted = _json({"$ref": "#/components/schemas/Disposition"}, "Accepted")
    mutating = (403, 404, 409, 422, 429)
    return {
        "openapi": "3.1.0",
        "info": {"title": "tether serve", "version": __version__},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": {"type": "string"}},
                },
                "Session": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "cwd": {"type": "string"},
                        "title": {"type": ["string", "null"]},
                        "created": {"type": "integer", "description": "Unix ms"},
                        "updated": {"type": "integer", "description": "Unix ms"},
                        "leafId": {"type": ["string", "null"]},
                        "parentSessionId": {"type": ["string", "null"]},
                        "parentEntryId": {
                            "type": ["string", "null"],
                            "description": "For a fork: the entry of the parent it was forked at",
                        },
                        "firstPrompt": {"type": ["string", "null"]},
                        "entryCount": {"type": "integer"},
                        "messageCount": {"type": "integer"},
                        "cost": {"type": "number"},
                        "inputTokens": {"type": "integer"},
                        "outputTokens": {"type": "integer"},
                    },
                },
                "Entry": {
                    "type": "object",
                    "description": "A stored session entry (docs/sessions.md)",
                    "required": ["id", "type"],
                    "properties": {"id": {"type": "string"}, "parentId": {"type": ["string", "null"]}},
                },
                "Prompt": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["message"],
                    "properties": {
                        "message": {"type": "string", "minLength": 1, "maxLength": 100000},
                        "streamingBehavior": {"enum": ["steer", "followUp"]},
                    },
                },
                "Message": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["message"],
                    "properties": {"message": {"type": "string", "minLength": 1, "maxLength": 100000}},
                },
                "EntryChoice": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["entryId"],
                    "properties": {"entryId": {"type": ["string", "null"], "maxLength": 100}},
                },
                "Approval": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["allow"],
                    "properties": {"allow": {"type": "boolean"}},
                },
                "RunSubmit": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["sessionId", "message"],
                    "properties": {
                        "sessionId": {"type": "string", "minLength": 1, "maxLength": 100},
                        "message": {"type": "string", "minLength": 1, "maxLength": 100000},
                    },
                },
                "Disposition": {
                    "type": "object",
                    "properties": {
                        "disposition": {"enum": ["started", "queued"]},
                        "sessionId": {"type": "string"},
                    },
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/api/sessions": {
                "get": {
                    "summary": "List sessions, newest first; q searches id, title, first prompt, folder",
                    "parameters": [
                        {"name": "q", "in": "query", "schema": {"type": "string"}},
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
                        },
                    ],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "sessions": {
                                        "type": "array",
                                        "items": {"$ref": "#/components/schemas/Session"},
                                    },
                                    "total": {"type": "integer"},
                                },
                            }
                        ),
                        **_errors(401, 422),
                    },
                },
                "post": _op(
                    "Start a new session on a first prompt",
                    accepted,
                    403,
                    422,
                    429,
                    body="Message",
                    path=False,
                ),
            },
            "/api/sessions/{session_id}": {
                "get": _op(
                    "A session and all its entries, in append order",
                    _json(
                        {
                            "type": "object",
                            "properties": {
                                "session": {"$ref": "#/components/schemas/Session"},
                                "entries": {"type": "array", "items": {"$ref": "#/components/schemas/Entry"}},
                            },
                        }
                    ),
                    404,
                )
            },
            "/api/sessions/{session_id}/tree": {
                "get": _op(
                    "The entry tree: nodes, leaf and the path from the root to it",
                    _json({"type": "object"}),
                    404,
                )
            },
            "/api/sessions/{session_id}/branch": {
                "post": _op(
                    "Move the session to another point of its tree (entryId null: before the first entry)",
                    _json({"type": "object", "properties": {"leafId": {"type": ["string", "null"]}}}),
                    403,
                    404,
                    409,
                    422,
                    body="EntryChoice",
                )
            },
            "/api/sessions/{session_id}/fork": {
                "post": _op(
                    "A new session holding the path up to entryId (null: the leaf): 201 {sessionId}",
                    _json({"type": "object", "properties": {"sessionId": {"type": "string"}}}, "Created"),
                    403,
                    404,
                    409,
                    422,
                    body="EntryChoice",
                )
            },
            "/api/sessions/{session_id}/approvals": {
                "get": _op(
                    "Tool calls of the session waiting for approval (id, tool, question, arguments)",
                    _json({"type": "object"}),
                    404,
                )
            },
            "/api/sessions/{session_id}/approvals/{approval_id}": {
                "post": {
                    **_op(
                        "Allow or deny a waiting tool call",
                        _json({"type": "object"}),
                        403,
                        404,
                        422,
                        body="Approval",
                    ),
                    "parameters": [
                        _SESSION_ID,
                        {"name": "approval_id", "in": "path", "required": True, "schema": {"type": "string"}},
                    ],
                }
            },
            "/api/sessions/{session_id}/html": {
                "get": _op(
                    "The whole session as one self-contained HTML page (the export's renderer)",
                    {"description": "OK", "content": {"text/html": {"schema": {"type": "string"}}}},
                    404,
                )
            },
            "/api/sessions/{session_id}/events": {
                "get": {
                    **_op(
                        "Follow the session over SSE: `entry` events (id = entry id, data = the entry), "
                        "`delta` (with its answer's `key`), `ended` (an answer's `key` and the `entry` storing it), `status`, `queue` (steering and follow-ups waiting), `partial` (the words so far of a message under way, sent on joining), `approval`, `approval_done`, `leaf` (live only, no id), `deleted`, and `dropped` (fell behind: resume from its lastEventId). Resume with Last-Event-ID "
                        "(or ?lastEventId=); ?history=false starts at the end; ?access_token= for EventSource",
                        {
                            "description": "OK",
                            "content": {"text/event-stream": {"schema": {"type": "string"}}},
                        },
                        400,
                        404,
                        503,
                    )
                }
            },
            "/api/sessions/{session_id}/state": {
                "get": _op(
                    "Whether this server has the session open and running", _json({"type": "object"}), 404
                )
            },
            "/api/sessions/{session_id}/prompt": {
                "post": _op("Prompt the session", accepted, *mutating, body="Prompt")
            },
            "/api/sessions/{session_id}/steer": {
                "post": _op("Queue a message for the next model call", accepted, *mutating, body="Message")
            },
            "/api/sessions/{session_id}/follow-up": {
                "post": _op(
                    "Queue a message for when the run would stop", accepted, *mutating, body="Message"
                )
            },
            "/api/sessions/{session_id}/clear-queue": {
                "post": _op(
                    "Take the queued steering and follow-ups back: {steering, followUp} (an abort keeps them)",
                    _json({"type": "object"}),
                    403,
                    404,
                )
            },
            "/api/sessions/{session_id}/abort": {
                "post": _op(
                    "Abort the session's run (answered at once); the queues stay, as with pi's abort",
                    _json({"type": "object"}),
                    403,
                    404,
                )
            },
            "/api/runs": {
                "get": {
                    "summary": "Durable runs, newest first (docs/durable.md)",
                    "parameters": [
                        {
                            "name": "status",
                            "in": "query",
                            "schema": {"enum": ["ENQUEUED", "PENDING", "SUCCESS", "ERROR", "CANCELLED"]},
                        },
                        {"name": "session", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {"200": _json({"type": "object"}), **_errors(401, 422, 501, 503)},
                },
                "post": _op(
                    "Submit a durable run of a prompt on a stored session: 201 {runId}",
                    _json({"type": "object", "properties": {"runId": {"type": "string"}}}, "Created"),
                    403,
                    404,
                    409,
                    422,
                    501,
                    503,
                    body="RunSubmit",
                    path=False,
                ),
            },
            "/api/runs/{run_id}": {
                "get": {
                    **_op(
                        "A run with its steps, tokens and cost",
                        _json({"type": "object"}),
                        404,
                        501,
                        503,
                        path=False,
                    ),
                    "parameters": [_RUN_ID],
                }
            },
            "/api/runs/{run_id}/cancel": {
                "post": {
                    **_op(
                        "Cancel a run (a finished one is left as it is)",
                        _json({"type": "object"}),
                        403,
                        404,
                        501,
                        503,
                        path=False,
                    ),
                    "parameters": [_RUN_ID],
                }
            },
            "/api/models": {
                "get": _op("Models a request can go to now", _json({"type": "object"}), path=False)
            },
        },
    }
