"""Reading providers' error texts: what each real wording teaches, and what it must not."""

from __future__ import annotations

import pytest

from benchwarmers_mcp.catalog.learned import is_capability, read

WINDOWS = [
    # OpenAI (and DeepSeek, Groq, LiteLLM's wrapper of them)
    ("This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. "
     "Please reduce the length of the messages.", 128000),
    ("litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - "
     "This model's maximum context length is 16385 tokens. However, your messages resulted in 20011 tokens.", 16385),
    ("Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 300001 tokens. Please "
     "reduce the length of the messages.", 272000),
    # Anthropic
    ('{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > '
     '200000 maximum"}}', 200000),
    # Gemini
    ("The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).", 1048576),
    # vLLM
    ("This model's maximum context length is 16384 tokens. However, you requested 122946 tokens (112946 in the "
     "messages, 10000 in the completion). Please reduce the length of the messages or completion.", 16384),
    ("The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that "
     "`max_model_len` is no smaller than the number of text tokens.", 4096),
    ("Input prompt (35247 tokens) is too long and exceeds limit of 1000", 1000),
    # OpenRouter
    ("This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens "
     "(139000 of text input, 1000 in the output). Please reduce the length of either one, or use the "
     '"middle-out" transform to compress your prompt automatically.', 131072),
    # Mistral
    ("Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length", 32768),
    # llama.cpp server and LM Studio
    ("request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it", 4096),
    ("Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context "
     "length of only 4096 tokens, which is not enough.", 4096),
    # Cerebras, TGI / Together
    ("Please reduce the length of the messages or completion. Current length is 9000 while limit is 8192", 8192),
    ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8193. Given: 9000 `inputs` tokens and "
     "512 `max_new_tokens`", 8193),
]


@pytest.mark.parametrize(("text", "limit"), WINDOWS)
def test_a_context_length_error_gives_the_window(text: str, limit: int) -> None:
    readings = read(f"upstream 400: {text}")
    assert [(r.fact, r.value) for r in readings if r.fact == "context_window"] == [("context_window", limit)]
    assert all(r.evidence.startswith("upstream 400: ") for r in readings)  # the error itself is the evidence


@pytest.mark.parametrize(("text", "limit"), [
    ("max_tokens is too large: 20480. This model supports at most 16384 completion tokens, whereas you provided "
     "20480.", 16384),  # OpenAI
    ("max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5",
     64000),  # Anthropic
])
def test_an_output_limit_error_gives_the_output_limit(text: str, limit: int) -> None:
    assert [(r.fact, r.value) for r in read(text)] == [("max_output", limit)]


@pytest.mark.parametrize("text", [
    '{"error":"registry.ollama.ai/library/gemma3:4b does not support tools"}',  # Ollama
    "No endpoints found that support tool use. To learn more about provider routing, visit: "
    "https://openrouter.ai/docs/provider-routing",  # OpenRouter (a 404)
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',  # vLLM
    "Unsupported parameter: 'tools' is not supported with this model.",  # OpenAI o1-era
    "litellm.UnsupportedParamsError: groq does not support parameters: ['tools'], for model=llama-guard. To drop "
    "these, set `litellm.drop_params=True`",  # LiteLLM
    "deepseek-reasoner does not support Function Calling",  # DeepSeek
    "Function calling is not enabled for models/gemma-3-27b-it",  # Gemini
    "tool calling is not supported with this model",  # Groq
])
def test_tools_not_supported_turns_tools_off(text: str) -> None:
    readings = read(text)
    assert [(r.fact, r.value) for r in readings] == [("tools", False)]
    assert is_capability(readings)


@pytest.mark.parametrize("text", [
    "No endpoints found that support image input",  # OpenRouter
    "Invalid content type. image_url is only supported by certain models.",  # OpenAI
    "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj",  # llama.cpp
    "Qwen2.5-7B-Instruct is not a multimodal model",  # vLLM
    "Failed to deserialize the JSON body into the target type: messages[0]: unknown variant `image_url`, expected "
    "`text`",  # DeepSeek
    "this model is missing data required for image input",  # Ollama
    "Model do not support image input. Request id: 021772629268392a",  # Volcengine
    "This model does not support image input.",
])
def test_image_input_not_supported_turns_vision_off(text: str) -> None:
    assert [(r.fact, r.value) for r in read(text)] == [("vision", False)]


@pytest.mark.parametrize("text", [
    # Groq's rate limit speaks of tokens and a limit: not a window
    "Request too large for model `llama-3.1-8b-instant` in organization `org_01` service tier `on_demand` on "
    "tokens per minute (TPM): Limit 6000, Requested 12000, please reduce your message size and try again.",
    # a failed tool call is not a model without tools
    "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.",
    # a tool_choice value some routes do not take is not "no tools"
    "No endpoints found that support the provided 'tool_choice' value.",
    "This model's maximum context length exceeded",  # no number stated: nothing to learn
    "max_tokens must be at least 1, got -186.",
    "fake 500 for alpha",
    "",
])
def test_errors_that_teach_nothing(text: str) -> None:
    assert read(text) == []
