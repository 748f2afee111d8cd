"""Fakes of two hubs, built from their documented APIs (both on loopback, both checking their keys):

- ``FakeOpenWebUI``: ``GET /api/models`` (an API key) lists each OpenAI-compatible connection's
  models as Open WebUI does (``owned_by: "openai"``, ``urlIdx``, the connection's ``prefix_id``
  joined to the id with a dot, its ``tags``), and its Ollama models (``owned_by: "ollama"``);
  ``GET /openai/config`` and ``POST /openai/config/update`` (the admin's key) read and replace the
  connections (``OPENAI_API_BASE_URLS``, ``OPENAI_API_KEYS``, ``OPENAI_API_CONFIGS``), as
  ``backend/open_webui/routers/openai.py`` does.
- ``FakeCLIProxy``: ``GET /v1/models`` (an API key) lists its sign-in models and its
  OpenAI-compatible providers' models (each by its ``alias``, else its ``name``);
  ``/v0/management/openai-compatibility`` (``Authorization: Bearer <management key>``) is GET, PUT
  (the whole list) and PATCH (one provider by ``name``), as its MANAGEMENT_API.md says.
- ``FakeLiteLLM``: ``GET /model/info`` and ``POST /model/new`` with the master key, as LiteLLM's
  proxy answers them with its database connected (the real proxy is tested too, without one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def _bearer(request: Request) -> str:
    return request.headers.get("authorization", "").removeprefix("Bearer ").strip()


def _refused() -> Response:
    return JSONResponse({"detail": "Your session has expired or the token is invalid."}, status_code=401)


@dataclass
class Connection:
    url: str
    key: str
    models: list[str]
    prefix_id: str | None = None
    tags: list[str] = field(default_factory=list)


@dataclass
class FakeOpenWebUI:
    api_key: str = "owui-user-key-0123456789"
    admin_key: str = "owui-admin-key-0123456789"
    connections: list[Connection] = field(default_factory=list)
    ollama: list[str] = field(default_factory=list)
    # models a connection's upstream lists, by its URL (a connection added later lists from here)
    upstream_models: dict[str, list[str]] = field(default_factory=dict)
    updates: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/api/models", self.models), Route("/openai/config", self.config),
                                 Route("/openai/config/update", self.update, methods=["POST"])])

    def config_body(self) -> dict[str, Any]:
        configs = {str(i): {"enable": True, **({"prefix_id": c.prefix_id} if c.prefix_id else {}),
                            "tags": [{"name": t} for t in c.tags], "model_ids": []}
                   for i, c in enumerate(self.connections)}
        return {"ENABLE_OPENAI_API": True, "OPENAI_API_BASE_URLS": [c.url for c in self.connections],
                "OPENAI_API_KEYS": [c.key for c in self.connections], "OPENAI_API_CONFIGS": configs}

    async def models(self, request: Request) -> Response:
        if _bearer(request) not in (self.api_key, self.admin_key):
            return _refused()
        data: list[dict[str, Any]] = []
        for i, c in enumerate(self.connections):
            for model in c.models or self.upstream_models.get(c.url, []):
                mid = f"{c.prefix_id}.{model}" if c.prefix_id else model
                data.append({"id": mid, "name": mid, "owned_by": "openai", "urlIdx": i, "connection_type": "external",
                             "openai": {"id": mid}, **({"tags": [{"name": t} for t in c.tags]} if c.tags else {})})
        data += [{"id": m, "name": m, "owned_by": "ollama", "ollama": {"name": m}, "urls": [0]} for m in self.ollama]
        return JSONResponse({"data": data})

    async def config(self, request: Request) -> Response:
        if _bearer(request) != self.admin_key:
            return _refused()
        return JSONResponse(self.config_body())

    async def update(self, request: Request) -> Response:
        if _bearer(request) != self.admin_key:
            return _refused()
        body = json.loads(await request.body())
        self.updates.append(body)
        configs = body["OPENAI_API_CONFIGS"]
        self.connections = []
        for i, url in enumerate(body["OPENAI_API_BASE_URLS"]):
            cfg = configs.get(str(i), {})
            self.connections.append(Connection(url, body["OPENAI_API_KEYS"][i], list(cfg.get("model_ids") or []),
                                               cfg.get("prefix_id"), [t["name"] for t in cfg.get("tags", [])]))
        return JSONResponse(self.config_body())


@dataclass
class FakeCLIProxy:
    api_key: str = "cliproxy-key-0123456789"
    management_key: str = "cliproxy-mgmt-0123456789"
    own: dict[str, str] = field(default_factory=dict)  # its sign-in models: id -> owned_by
    providers: list[dict[str, Any]] = field(default_factory=list)
    writes: list[tuple[str, Any]] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/models", self.models),
                                 Route("/v0/management/openai-compatibility", self.compat,
                                       methods=["GET", "PUT", "PATCH"])])

    async def models(self, request: Request) -> Response:
        if _bearer(request) != self.api_key:
            return JSONResponse({"error": "Invalid API key"}, status_code=401)
        data = [{"id": mid, "object": "model", "owned_by": owner} for mid, owner in self.own.items()]
        data += [{"id": m.get("alias") or m["name"], "object": "model", "owned_by": p["name"]}
                 for p in self.providers for m in p.get("models", [])]
        return JSONResponse({"object": "list", "data": data})

    async def compat(self, request: Request) -> Response:
        if _bearer(request) != self.management_key:
            return JSONResponse({"error": "invalid management key"}, status_code=401)
        if request.method == "GET":
            return JSONResponse({"openai-compatibility": self.providers})
        body = json.loads(await request.body())
        self.writes.append((request.method, body))
        if request.method == "PUT":
            self.providers = list(body["items"] if isinstance(body, dict) else body)
        else:
            at = next((i for i, p in enumerate(self.providers) if p["name"] == body.get("name")), None)
            if at is None:
                return JSONResponse({"error": "item not found"}, status_code=404)
            self.providers[at] = body["value"]
        return JSONResponse({"status": "ok"})


@dataclass
class FakeLiteLLM:
    master_key: str = "sk-master-0123456789"
    deployments: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/model/info", self.info), Route("/v1/models", self.list_models),
                                 Route("/model/new", self.new, methods=["POST"])])

    async def info(self, request: Request) -> Response:
        if _bearer(request) != self.master_key:
            return JSONResponse({"error": {"message": "Authentication Error", "code": "401"}}, status_code=401)
        return JSONResponse({"data": [{**d, "litellm_params": {k: v for k, v in d["litellm_params"].items()
                                                                 if k != "api_key"}} for d in self.deployments]})

    async def list_models(self, request: Request) -> Response:
        return JSONResponse({"data": [{"id": d["model_name"], "object": "model", "owned_by": "openai"}
                                      for d in self.deployments], "object": "list"})

    async def new(self, request: Request) -> Response:
        if _bearer(request) != self.master_key:
            return JSONResponse({"error": {"message": "Authentication Error", "code": "401"}}, status_code=401)
        body = json.loads(await request.body())
        self.deployments.append({"model_name": body["model_name"], "litellm_params": body["litellm_params"],
                                 "model_info": {"id": f"id-{len(self.deployments)}"}})
        return JSONResponse({"model_id": f"id-{len(self.deployments) - 1}", "model_name": body["model_name"]})
