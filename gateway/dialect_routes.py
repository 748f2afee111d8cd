"""The routes of every client format beside OpenAI chat, in one group for the app's route table.

Gemini's ``/v1/models/<name>:<method>`` shares its path with the model lookups of three SDKs, so
POSTs go to Gemini and GETs to ``model_lists``, which tells the SDKs apart by their headers.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from benchwarmers_mcp.gateway import anthropic, completions, gemini, model_lists, ollama, responses


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/models", model_lists.list_models, methods=["GET"]),
        Route("/models", model_lists.list_models, methods=["GET"]),
        Route("/v1/models/{rest:path}", gemini.model_method, methods=["POST"]),
        Route("/v1/models/{rest:path}", model_lists.get_model, methods=["GET"]),
        Route("/v1beta/models", model_lists.gemini_list, methods=["GET"]),
        Route("/v1beta/models/{rest:path}", gemini.model_method, methods=["POST"]),
        Route("/v1beta/models/{rest:path}", model_lists.gemini_get, methods=["GET"]),
        Route("/v1/messages", anthropic.messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", anthropic.count_tokens, methods=["POST"]),
        Route("/v1/responses", responses.create_response, methods=["POST"]),
        Route("/responses", responses.create_response, methods=["POST"]),
        Route("/v1/completions", completions.completions, methods=["POST"]),
        Route("/completions", completions.completions, methods=["POST"]),
        Route("/api/chat", ollama.chat, methods=["POST"]),
        Route("/api/generate", ollama.generate, methods=["POST"]),
        Route("/api/show", ollama.show, methods=["POST"]),
        Route("/api/tags", model_lists.ollama_tags, methods=["GET"]),
        Route("/api/version", ollama.version, methods=["GET"]),
        Route("/api/ps", ollama.running, methods=["GET"]),
    ]
