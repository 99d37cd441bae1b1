#!/usr/bin/env python3
"""Copy streamed HTTP exchanges out of pydantic-ai's VCR cassettes into tether's stream fixtures.

Each selected interaction becomes ``tests/fixtures/streams/<api>/<name>.json`` in the format of
``reference/fixtures/README.md``::

    {"source": "pydantic/pydantic-ai@<commit> <cassette path> (interaction <i>)",
     "api": "...", "url": <recorded request URL>, "request": <recorded request body>,
     "response": {"status": <int>, "contentType": <str>, "body": <raw SSE text>}}

``--cassettes`` is a directory laid out like the pydantic-ai repository (``tests/...yaml``). A
cassette there is either a full VCR cassette or a copy trimmed to the selected interactions: a
trimmed copy has a top-level ``commit`` (the pydantic-ai commit it was copied from) and each kept
interaction carries its original ``index`` and the response's ``content_type``. A selection line
with a fifth column (a pydantic-ai commit) reads an older recording of a cassette, stored under
``DIR/<commit>/tests/...`` next to the current one. Only recorded data
(request body and URL, response status, content type and body) is copied, never test code.

Usage: python scripts/extract_stream_fixtures.py --cassettes DIR [--out tests/fixtures/streams]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

# api, fixture name, cassette path under tests/, interaction index[, pydantic-ai commit]
SELECTION_TABLE = """
openai-completions   openai-moderation-after-usage    models/cassettes/test_openai/test_openai_moderation_stream.yaml 0
openai-completions   groq-compound-executed-tools     models/cassettes/test_groq/test_groq_model_web_search_tool_stream_single_chunk.yaml 0
openai-completions   openrouter-web-search-usage      models/cassettes/test_openrouter/test_openrouter_web_search_tool_usage_stream.yaml 0
openai-completions   openai-tool-call-strict          models/cassettes/test_openai/test_run_stream_sync_streams_real_model.yaml 0
openai-completions   openai-text-after-tool-result    models/cassettes/test_openai/test_run_stream_sync_streams_real_model.yaml 1
openai-completions   openrouter-encrypted-reasoning   models/cassettes/test_openrouter/test_openrouter_stream_with_reasoning.yaml 0
openai-completions   openrouter-advisor-server-tool   models/cassettes/test_openrouter/test_openrouter_advisor_tool_stream.yaml 0
openai-completions   groq-error-event-after-text      models/cassettes/test_groq/test_tool_use_failed_error_streaming_with_text.yaml 0
openai-completions   openrouter-bedrock-processing-comments models/cassettes/test_openrouter/test_openrouter_cache_streaming_e2e.yaml 0
openai-completions   openrouter-novita-url-annotations models/cassettes/test_openrouter/test_openrouter_web_search_annotations_stream.yaml 0
openai-completions   openai-tool-call-first-chunk-refusal cassettes/test_dbos/test_complex_agent_run_in_workflow.yaml 1 f077d56ce09d88b03c046985161230fad796aa0d
openai-completions   openai-structured-args-many-deltas cassettes/test_dbos/test_complex_agent_run_in_workflow.yaml 2 f077d56ce09d88b03c046985161230fad796aa0d
openai-completions   openai-parallel-calls-split-args cassettes/test_prefect/test_complex_agent_run_in_flow.yaml 1 f077d56ce09d88b03c046985161230fad796aa0d
openai-responses     openai-custom-tool-call          models/cassettes/test_openai_responses/test_gpt5_freeform_text_streaming.yaml 0
openai-responses     openai-file-search-annotation    models/cassettes/test_openai_responses/test_openai_responses_model_file_search_tool_stream.yaml 3
openai-responses     openai-background-queued         models/cassettes/test_openai_responses/test_background_mode_streaming_vcr.yaml 0
openai-responses     openai-moderation-result         models/cassettes/test_openai_responses/test_openai_responses_moderation_stream.yaml 0
openai-responses     openai-shell-call-phase          models/cassettes/test_openai/test_openai_responses_shell_tool_stream.yaml 0
openai-responses     openai-conversation-object       models/cassettes/test_openai_responses/test_openai_conversation_id_streaming_provider_details.yaml 1
openai-responses     openai-local-shell-call-only     models/cassettes/test_openai/test_openai_responses_local_shell_toolset_stream.yaml 0
openai-responses     openai-text-no-logprobs-after-shell models/cassettes/test_openai/test_openai_responses_local_shell_toolset_stream.yaml 1
openai-responses     openai-function-call-obfuscated-deltas models/cassettes/test_openai_responses/test_openai_responses_stream.yaml 0 111dda9bcd3bb8542d24be815343c17ca133e4e8
openai-responses     openai-text-logprobs-completed-at models/cassettes/test_openai_responses/test_openai_responses_stream.yaml 1 111dda9bcd3bb8542d24be815343c17ca133e4e8
anthropic-messages   client-tool-use-text-editor      models/cassettes/test_anthropic/test_anthropic_text_editor_toolset_stream.yaml 0
anthropic-messages   text-after-tool-result           models/cassettes/test_anthropic/test_anthropic_text_editor_toolset_stream.yaml 1
anthropic-messages   padded-json-usage-in-delta       models/cassettes/test_anthropic/test_anthropic_fable_5_1_drops_a_stale_thinking_block_streamed.yaml 1
anthropic-messages   server-bash-code-execution       models/cassettes/test_anthropic/test_anthropic_shell_tool_stream.yaml 0
anthropic-messages   tool-use-single-json-delta       models/cassettes/test_anthropic/test_anthropic_local_shell_toolset_stream.yaml 0
anthropic-messages   text-emoji-after-tool-result     models/cassettes/test_anthropic/test_anthropic_local_shell_toolset_stream.yaml 1
anthropic-messages   thinking-then-tool-use           cassettes/test_claude_code/test_a_real_anthropic_run_streams_thinking_and_a_tool_call.yaml 0
anthropic-messages   text-after-thinking-tool-turn    cassettes/test_claude_code/test_a_real_anthropic_run_streams_thinking_and_a_tool_call.yaml 1
anthropic-messages   code-execution-file-output-container models/cassettes/test_anthropic/test_anthropic_code_execution_file_outputs_stream.yaml 0
anthropic-messages   thinking-text-code-execution-stop-details models/cassettes/test_anthropic/test_anthropic_code_execution_download_file_stream.yaml 0
anthropic-messages   text-editor-then-bash-file-output models/cassettes/test_anthropic/test_anthropic_shell_tool_file_outputs_stream.yaml 0
anthropic-messages   cache-read-diagnostics           models/anthropic/cassettes/test_cache_diagnostics/test_cache_diagnostics_streamed.yaml 1
anthropic-messages   thinking-empty-delta-then-text   models/cassettes/test_anthropic/test_anthropic_model_thinking_part_stream.yaml 0 07b877493d0a132b6037f1a7471e15def6faec44
anthropic-messages   parallel-text-editor-create-view models/cassettes/test_anthropic/test_anthropic_text_editor_code_execution_tool_stream.yaml 0 14aeef140067518983efc967242377a1a3599e73
anthropic-messages   thinking-code-execution-legacy-result models/cassettes/test_anthropic/test_anthropic_code_execution_tool_stream.yaml 0 f077d56ce09d88b03c046985161230fad796aa0d
google-generative-ai url-context-thoughts-tokens      models/cassettes/test_google/test_google_model_web_fetch_tool_stream.yaml 0
google-generative-ai empty-text-signature-json-output models/cassettes/test_google/test_google_auto_native_structured_stream_gemini_3.yaml 0
google-generative-ai thought-code-execution-two-stops models/cassettes/test_google/test_google_model_builtin_code_execution_stream.yaml 0
google-generative-ai file-search-grounding            models/cassettes/test_google/test_google_model_file_search_tool_stream.yaml 3
google-generative-ai vertex-signature-only-parts      models/google/cassettes/test_agentic_video/test_agentic_video_processing_vertex[streaming].yaml 0
google-generative-ai server-tool-call-response-parts models/google/cassettes/test_agentic_video/test_agentic_video_processing[streaming].yaml 0
google-generative-ai second-function-call-after-result models/cassettes/test_google/test_google_model_iter_stream.yaml 1
google-generative-ai url-context-segment-no-start    models/cassettes/test_google/test_google_model_web_fetch_tool_stream.yaml 0 f518769326808ad9053e37d8320156dadc8c2149
google-generative-ai text-newline-prompt-count-drops models/cassettes/test_google/test_google_model_iter_stream.yaml 2 8ad533c9dbc220889b914003758c1b82d8297d01
google-generative-ai signed-call-empty-args-gemini-3 models/cassettes/test_google/test_google_streaming_tool_call_thought_signature.yaml 0 5acaebb37859efaed3b6b60009b2f3814a102bd5
google-generative-ai single-chunk-thoughts-tokens    models/cassettes/test_google/test_google_model_stream.yaml 0 07b877493d0a132b6037f1a7471e15def6faec44
google-generative-ai gemini-1-5-no-index-no-response-id models/cassettes/test_google/test_google_model_stream.yaml 0 745bfa24bff975ae7b366dd617148ef8654fed7e
google-generative-ai code-execution-empty-text-latex models/google/cassettes/test_code_execution/test_code_execution_stream.yaml 0 1e4741761222eac344227c403289306d2a24e140
google-generative-ai text-after-signed-call-prompt-jump models/cassettes/test_google/test_google_streaming_tool_call_thought_signature.yaml 1 5acaebb37859efaed3b6b60009b2f3814a102bd5
google-generative-ai function-call-with-stop-no-index models/cassettes/test_google/test_google_model_iter_stream.yaml 0 07b877493d0a132b6037f1a7471e15def6faec44
google-generative-ai text-after-two-results-prompt-drops models/cassettes/test_google/test_google_model_iter_stream.yaml 2 07b877493d0a132b6037f1a7471e15def6faec44
google-generative-ai thought-summaries-signed-text-gemini-2-5-pro models/cassettes/test_google/test_google_model_thinking_part_iter.yaml 0 111dda9bcd3bb8542d24be815343c17ca133e4e8
google-generative-ai signed-call-with-id-native-output models/google/cassettes/test_structured_output/test_native_output_with_function_tools_stream.yaml 0 1e4741761222eac344227c403289306d2a24e140
google-generative-ai json-output-trailing-space-signed-end models/google/cassettes/test_structured_output/test_native_output_with_function_tools_stream.yaml 1 1e4741761222eac344227c403289306d2a24e140
"""
SELECTION = [
    (api, name, "tests/" + path, int(index), version[0] if version else None)
    for api, name, path, index, *version in (line.split() for line in SELECTION_TABLE.strip().splitlines())
]


def header(headers: dict[str, Any] | None, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return value[0] if isinstance(value, list) else value
    return None


def body_text(body: Any) -> Any:
    """The body of a recorded request or response: ``{"string": ...}`` in the older cassette
    format, ``{"type": "json" | "text", "content": ...}`` in the newer one (JSON already parsed)."""
    if isinstance(body, dict):
        body = body["string"] if "string" in body else body.get("content")
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    return body


def interaction(cassette: dict[str, Any], index: int) -> dict[str, Any]:
    found = [it for it in cassette["interactions"] if it.get("index") == index]
    return found[0] if found else cassette["interactions"][index]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cassettes", required=True, type=Path)
    parser.add_argument("--out", type=Path, default=Path("tests/fixtures/streams"))
    args = parser.parse_args()
    cache: dict[str, dict[str, Any]] = {}
    for api, name, path, index, version in SELECTION:
        stored = f"{version}/{path}" if version else path
        if stored not in cache:
            cache[stored] = yaml.load(
                (args.cassettes / stored).read_text(encoding="utf-8"), Loader=yaml.SafeLoader
            )
        cassette = cache[stored]
        it = interaction(cassette, index)
        request, response = it["request"], it["response"]
        body = body_text(response.get("body"))
        if not isinstance(body, str) or not re.search(r"^(data:|event:)", body, re.M):
            print(f"{path} #{index}: response body is not SSE", file=sys.stderr)
            return 1
        parsed = request.get("parsed_body")
        if parsed is None:
            recorded = body_text(request.get("body"))
            parsed = recorded if isinstance(recorded, dict) else json.loads(recorded)
        status = response["status"]
        fixture = {
            "source": f"pydantic/pydantic-ai@{cassette.get('commit', 'unknown')} {path} (interaction {index})",
            "api": api,
            "url": request.get("uri"),
            "request": parsed,
            "response": {
                "status": int(status["code"] if isinstance(status, dict) else status),
                "contentType": response.get("content_type")
                or header(response.get("headers"), "content-type")
                or "text/event-stream",
                "body": body,
            },
        }
        dest = args.out / api / f"{name}.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(fixture, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{dest}  ({len(body)} chars)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
