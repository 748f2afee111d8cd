"""What a model's own error says about it: the one place providers' wording is read.

Pure functions over an error's text. Each reading is a (fact, value) with the text kept as its
evidence: a context-length error that states the limit gives the window; one that states the
output limit gives it; "tools not supported" turns tools off; "image input not supported" turns
vision off. The wordings come from real providers (OpenAI, Anthropic, Gemini, Groq, OpenRouter,
Ollama, vLLM, llama.cpp, LM Studio, Mistral, Cerebras, DeepSeek, TGI, LiteLLM's wrappers of
them); a rate limit that talks about tokens (Groq's "Request too large ... tokens per minute")
is not a window, and a failed tool call is not a model without tools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

NUMBER = r"(\d[\d,_]*)"

# (pattern, fact): the first group is the number the fact takes
WINDOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"maximum context length is {NUMBER} tokens",  # OpenAI, vLLM, Groq, DeepSeek, OpenRouter, LiteLLM
    rf"prompt is too long: [\d,]+ tokens > {NUMBER} maximum",  # Anthropic
    rf"input token count \(?[\d,]+\)? exceeds the maximum number of tokens allowed \(?{NUMBER}\)?",  # Gemini
    rf"input tokens exceed the configured limit of {NUMBER} tokens",  # OpenAI (Responses era)
    rf"too large for model with {NUMBER} maximum context length",  # Mistral
    rf"longer than the maximum model length of {NUMBER}",  # vLLM
    rf"is too long and exceeds limit of {NUMBER}",  # vLLM scheduler
    rf"exceeds the available context size \({NUMBER} tokens\)",  # llama.cpp server
    rf"loaded with context length of only {NUMBER} tokens",  # LM Studio
    rf"reduce the length of the messages.*?current length is [\d,]+ while limit is {NUMBER}",  # Cerebras
    rf"`inputs` tokens \+ `max_new_tokens` must be <= {NUMBER}",  # TGI, Together
))
OUTPUT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"supports at most {NUMBER} completion tokens",  # OpenAI
    rf"max_tokens: [\d,]+ > {NUMBER}, which is the maximum allowed number of output tokens",  # Anthropic
))
NO_TOOLS = re.compile("|".join((
    r"does not support (?:tools|tool use|tool calling|function calling)",  # Ollama, DeepSeek, many
    r"no endpoints found that support tool use",  # OpenRouter
    r"(?:tool use|tool calling|function calling|tools) (?:is|are) not (?:supported|enabled|available)",
    r"'tools' is not supported",  # OpenAI (o1-era models)
    r"does not support parameters: \[[^\]]*'tools'",  # LiteLLM
    r"\"auto\" tool choice requires --enable-auto-tool-choice",  # vLLM started without a tool parser
    r"function calling is not enabled",  # Gemini, Mistral
)), re.IGNORECASE)
NO_IMAGES = re.compile("|".join((
    r"no endpoints found that support image input",  # OpenRouter
    r"(?:does|do) not support (?:image input|images|image inputs|vision)",
    r"image input is not supported",  # llama.cpp, Groq
    r"image_url is only supported by certain models",  # OpenAI
    r"is not a multimodal model",  # vLLM
    r"unknown variant `image_url`",  # DeepSeek
    r"missing data required for image input",  # Ollama
    r"images? (?:are|is) not supported",
)), re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    fact: str
    value: Any
    evidence: str


def _number(text: str) -> int | None:
    digits = re.sub(r"[,_]", "", text)
    return int(digits) if digits.isdigit() and int(digits) > 0 else None


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found and (value := _number(found.group(1))) is not None:
            return value
    return None


def read(text: str) -> list[Reading]:
    """Every fact an error's text states about the model (none for an error that says nothing)."""
    if not text:
        return []
    flat = " ".join(text.split())
    evidence = flat[:500]
    out: list[Reading] = []
    window = _first(WINDOW_PATTERNS, flat)
    if window is not None:
        out.append(Reading("context_window", window, evidence))
    output = _first(OUTPUT_PATTERNS, flat)
    if output is not None:
        out.append(Reading("max_output", output, evidence))
    if NO_TOOLS.search(flat):
        out.append(Reading("tools", False, evidence))
    if NO_IMAGES.search(flat):
        out.append(Reading("vision", False, evidence))
    return out


def is_capability(readings: list[Reading]) -> bool:
    """The error is about what the model cannot take (not about the model being gone)."""
    return any(r.fact in ("tools", "vision") for r in readings)
