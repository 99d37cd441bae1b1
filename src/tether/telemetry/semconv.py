"""The names tether's spans and metrics use: OpenTelemetry GenAI semantic conventions, and tether's own.

The GenAI conventions are in Development status and moved to their own repository
(``open-telemetry/semantic-conventions-genai``); the Python ``incubating`` module that spelled
them is deprecated. So the names tether emits are written down here, once, as plain strings:
what a dashboard sees does not change when a dependency renames a constant.

``tether.*`` names are tether's own, for what the conventions do not cover (cost, retries,
turns, the wire API).
"""

from __future__ import annotations

# -- operations (span names are "{operation} {model}", "invoke_agent {name}", "execute_tool {name}")

CHAT = "chat"
INVOKE_AGENT = "invoke_agent"
EXECUTE_TOOL = "execute_tool"

# -- attributes ---------------------------------------------------------------------------------

OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
CONVERSATION_ID = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"

REQUEST_MODEL = "gen_ai.request.model"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_STREAM = "gen_ai.request.stream"

RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"

USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
"""All input tokens, cached ones included (tether's ``usage.input`` excludes them)."""
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"

TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"

TOKEN_TYPE = "gen_ai.token.type"

SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"

# Opt-in (content): recorded only with ``capture_content``; they hold what users and tools wrote.
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"

# tether's own
API = "tether.api"
"""The wire API of the call (``anthropic-messages``, ``openai-responses``, ...)."""
REQUEST_THINKING = "tether.request.thinking"
"""The unified thinking level asked for (before the provider clamps it)."""
RETRIES = "tether.request.retries"
"""How many times the request was repeated after a failed attempt."""
USAGE_COST = "tether.usage.cost"
"""What the call (or, on ``invoke_agent``, the whole run) cost, in USD, at the model's list prices."""
PURPOSE = "tether.purpose"
"""Why a model call outside a run's loop was made: ``compaction`` or ``branch_summary``."""
COMPACTION = "compaction"
BRANCH_SUMMARY = "branch_summary"
TURN = "tether.turn"
"""Which turn of the run (1 for the first) a model call or a delivered message belongs to."""

# -- span events --------------------------------------------------------------------------------

RETRY_EVENT = "tether.retry"
"""On a model-call span: a failed attempt is about to be repeated."""
RETRY_ATTEMPT = "tether.retry.attempt"
RETRY_DELAY = "tether.retry.delay"
RETRY_REASON = "tether.retry.reason"

MESSAGE_EVENT = "tether.message"
"""On ``invoke_agent``: a message delivered during the run (steering, follow-up, continuation)."""
MESSAGE_ROLE = "tether.message.role"

# -- error.type values of tether's own (besides HTTP statuses and exception class names) ----------

ABORTED = "aborted"
"""The call or run was stopped through its abort signal."""
CANCELLED = "cancelled"
"""The caller's task was cancelled mid-run."""
TOOL_ERROR = "tool_error"
"""The tool's result is an error it did not raise: unknown tool, invalid arguments, blocked by a hook."""
OTHER = "_OTHER"
"""The conventions' fallback: a provider error without an HTTP status."""

# -- metrics ------------------------------------------------------------------------------------

TOKEN_USAGE_METRIC = "gen_ai.client.token.usage"
OPERATION_DURATION_METRIC = "gen_ai.client.operation.duration"
TIME_TO_FIRST_CHUNK_METRIC = "gen_ai.client.operation.time_to_first_chunk"
COST_METRIC = "tether.client.cost"

TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
SECONDS_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)

PROVIDER_NAMES = {
    "google": "gcp.gemini",
    "google-vertex": "gcp.vertex_ai",
    "amazon-bedrock": "aws.bedrock",
    "azure-openai-responses": "azure.ai.openai",
    "mistral": "mistral_ai",
    "xai": "x_ai",
}
"""tether provider ids whose conventional ``gen_ai.provider.name`` differs; the others are used as they are."""

FINISH_REASONS = {"toolUse": "tool_call"}
"""tether stop reasons whose conventional finish reason differs (``stop``, ``length``, ``error`` match)."""
