"""Inbound wire formats. Each dialect module parses a request into an ``Ask``, renders a panel
and a route turn (whole and streamed) in its own shape, and renders errors in its own shape;
what they share is in ``face``.

``openai_chat``  OpenAI chat completions        ``responses``  OpenAI Responses
``anthropic``    Anthropic Messages             ``gemini``     Gemini generateContent
``ollama``       Ollama's native API            ``completions``  legacy OpenAI completions
``model_lists``  every SDK's model list         ``bench_routes``  ``/bench/*`` (verdicts, record)
``face``         the ask flow and the pieces every dialect shares
``images``, ``options``, ``tool_defs``, ``tool_ids``, ``sse``, ``retry``: small parts of requests and replies
"""

__all__ = ["anthropic", "bench_routes", "completions", "face", "gemini", "model_lists", "ollama", "openai_chat",
           "responses"]
