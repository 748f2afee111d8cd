"""The Responses API's tool kinds, as a member on chat completions can take them, and back.

Every kind the API defines is accepted (the openai SDK's ``types/responses/tool.py`` union):

- ``function`` and ``custom`` (a free-form tool, Codex's ``apply_patch``: a function taking one
  string, ``input``, its grammar in the description) pass as they are;
- ``namespace`` groups (Codex sends each MCP server's tools as one, ``mcp__<server>``) are
  flattened: each tool reaches the member as ``<namespace>__<name>``, and its call goes back as the
  tool's own name with ``namespace`` set, which is how Codex routes it;
- the tools the *client* runs, ``local_shell``, ``shell`` (with a local environment),
  ``apply_patch`` and a ``tool_search`` run by the client, become functions with the arguments of
  their call items; the member's call goes back as a ``local_shell_call``, ``shell_call``,
  ``apply_patch_call`` or ``tool_search_call`` item. Tools a ``tool_search_output`` (or an
  ``additional_tools`` item) brings in are offered from then on;
- the tools OpenAI runs itself (web and file search, code interpreter, image generation, remote
  MCP servers, computer use, a hosted shell, programmatic tool calling, a server-side tool search),
  and any kind this list does not know, are left out of the member's request and listed in
  ``bench.dropped_tools``. Their items in the conversation are left out too.

A ``Toolbox`` is made afresh from each request (nothing is kept between requests): the tools a
member gets, and for each of their names where it came from (``Origin``), so a call maps back.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.gateway import tool_defs
from benchwarmers_mcp.messages import Tool, ToolCall, ToolResult

Kind = Literal["function", "custom", "local_shell", "shell", "apply_patch", "tool_search"]
CUSTOM_PARAMETERS = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
NAMESPACE_JOIN = "__"

HOSTED = {
    "web_search": "OpenAI's web search runs on OpenAI's servers", "web_search_preview": "",
    "web_search_2025_08_26": "", "web_search_preview_2025_03_11": "",
    "file_search": "OpenAI's file search reads vector stores kept by OpenAI",
    "code_interpreter": "OpenAI's code interpreter runs in OpenAI's containers",
    "image_generation": "OpenAI's image generation runs on OpenAI's servers",
    "mcp": "a remote MCP server is called by OpenAI's servers, not by the client",
    "computer": "computer use needs OpenAI's computer-use model", "computer_use_preview": "",
    "computer_use": "",
    "programmatic_tool_calling": "programmatic tool calling runs on OpenAI's servers",
}
HOSTED_ITEMS = ("web_search_call", "file_search_call", "computer_call", "computer_call_output",
                "code_interpreter_call", "image_generation_call", "mcp_call", "mcp_list_tools",
                "mcp_approval_request", "mcp_approval_response", "program", "program_output", "compaction",
                "compaction_trigger", "configuration_update")

LOCAL_SHELL = Tool("local_shell", "Run a command on the user's machine and read its output.", {
    "type": "object", "required": ["command"], "properties": {
        "command": {"type": "array", "items": {"type": "string"}, "description": "The program and its arguments"},
        "working_directory": {"type": "string"}, "timeout_ms": {"type": "integer"},
        "env": {"type": "object", "additionalProperties": {"type": "string"}}}})
SHELL = Tool("shell", "Run shell commands on the user's machine and read their output.", {
    "type": "object", "required": ["commands"], "properties": {
        "commands": {"type": "array", "items": {"type": "string"}, "description": "Shell commands, run in order"},
        "timeout_ms": {"type": "integer"}, "max_output_length": {"type": "integer"}}})
APPLY_PATCH = Tool("apply_patch", (
    "Create, update or delete one file. For create_file, diff is the new file's lines each prefixed "
    "with '+'; for update_file, diff is a V4A diff of the change (context lines prefixed ' ', removed "
    "'-', added '+', hunks introduced by '@@'); delete_file needs no diff."), {
    "type": "object", "required": ["type", "path"], "properties": {
        "type": {"type": "string", "enum": ["create_file", "update_file", "delete_file"]},
        "path": {"type": "string"}, "diff": {"type": "string"}}})
TOOL_SEARCH: dict[str, Any] = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}


@dataclass(frozen=True)
class Origin:
    """Where a member-facing tool name came from: the tool's kind, own name and namespace."""

    kind: Kind
    name: str
    namespace: str | None = None


def joined(namespace: str | None, name: str) -> str:
    """A namespaced tool's name as a member sees it."""
    if not namespace:
        return name
    return namespace + ("" if namespace.endswith(NAMESPACE_JOIN) else NAMESPACE_JOIN) + name


@dataclass
class Toolbox:
    """One request's tools as the member gets them, where each name came from, and what was left out."""

    tools: list[Tool] = field(default_factory=list)
    origins: dict[str, Origin] = field(default_factory=dict)
    dropped: list[dict[str, str]] = field(default_factory=list)

    # ---- building it ----

    def _add(self, tool: Tool, origin: Origin) -> None:
        if origin in self.origins.values():
            return  # offered twice (a tool search found a tool the request already had): once is enough
        name = tool.name
        if name in self.origins:  # a flattened name that clashes with another tool's: a stable variant
            digest = hashlib.sha256(f"{origin.kind}\x1f{origin.namespace}\x1f{origin.name}".encode()).hexdigest()
            name = f"{name}_{digest[:6]}"
        self.origins[name] = origin
        self.tools.append(Tool(name, tool.description, tool.parameters, tool.kind))

    def _drop(self, kind: str, why: str, name: str | None = None) -> None:
        entry = {"type": kind, **({"name": name} if name else {}), "why": why}
        if entry not in self.dropped:
            self.dropped.append(entry)

    def add(self, raw: Any, where: str, namespace: str | None = None) -> None:
        """One entry of a ``tools`` array (or of a namespace, a tool search's output...)."""
        if not isinstance(raw, dict):
            raise BadRequest(f"{where} must be an object")
        kind = raw.get("type")
        if kind == "namespace" and namespace is None:
            self._namespace(raw, where)
        elif kind in ("function", "custom"):
            self._named(raw, where, kind, namespace)
        elif kind in ("local_shell", "apply_patch") and namespace is None:
            builtin = LOCAL_SHELL if kind == "local_shell" else APPLY_PATCH
            self._add(builtin, Origin(kind, kind))
        elif kind == "shell" and namespace is None:
            self._shell(raw)
        elif kind == "tool_search" and namespace is None:
            self._tool_search(raw)
        elif isinstance(kind, str) and kind:
            why = HOSTED.get(kind) or next((v for k, v in HOSTED.items() if v and kind.startswith(k)), "")
            label = raw.get("name") or raw.get("server_label")
            self._drop(kind, why or f"{kind!r} is not a tool kind a member can run",
                       label if isinstance(label, str) else None)
        else:
            raise BadRequest(f"{where}.type must be a string naming the tool's kind (function, custom, namespace...)")

    def _namespace(self, raw: dict[str, Any], where: str) -> None:
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise BadRequest(f"{where}.name must be a string")
        tools = raw.get("tools")
        if not isinstance(tools, list):
            raise BadRequest(f"{where}.tools must be a list")
        for i, t in enumerate(tools):
            self.add(t, f"{where}.tools[{i}]", namespace=name)

    def _named(self, raw: dict[str, Any], where: str, kind: Kind, namespace: str | None) -> None:
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise BadRequest(f"{where}.name must be a string")
        description = str(raw.get("description") or "")
        if kind == "custom":
            fmt = raw.get("format")
            if isinstance(fmt, dict) and fmt.get("type") == "grammar":
                description += (f"\n\nThe input must follow this {fmt.get('syntax', '')} grammar:\n"
                                f"{fmt.get('definition', '')}").rstrip()
            tool = Tool(joined(namespace, name), description.strip(), CUSTOM_PARAMETERS, kind="custom")
        else:
            tool = tool_defs.tool(joined(namespace, name), description, raw.get("parameters"))
        self._add(tool, Origin(kind, name, namespace))

    def _shell(self, raw: dict[str, Any]) -> None:
        environment = raw.get("environment")
        place = environment.get("type") if isinstance(environment, dict) else None
        if place not in (None, "local"):
            self._drop("shell", "a shell in OpenAI's hosted container runs on OpenAI's servers")
            return
        self._add(SHELL, Origin("shell", "shell"))

    def _tool_search(self, raw: dict[str, Any]) -> None:
        if raw.get("execution") != "client":
            self._drop("tool_search", "a tool search run by OpenAI's servers; every tool is offered as it is instead")
            return
        given = raw.get("parameters")
        parameters: dict[str, Any] = given if isinstance(given, dict) else TOOL_SEARCH
        description = str(raw.get("description") or "Search for more tools by what they do.")
        self._add(Tool("tool_search", description, parameters), Origin("tool_search", "tool_search"))

    # ---- names both ways ----

    def name_of(self, kind: Kind, name: str, namespace: str | None = None) -> str:
        """The member-facing name of a tool a conversation item names."""
        origin = Origin(kind, name, namespace or None)
        for ours, known in self.origins.items():
            if known == origin or (kind in ("function", "custom") and known.kind in ("function", "custom")
                                   and (known.name, known.namespace) == (name, namespace or None)):
                return ours
        return joined(namespace, name) if kind in ("function", "custom") else kind

    def origin(self, name: str) -> Origin:
        """Where a member's call goes back to; a name nobody offered stays a plain function."""
        return self.origins.get(name) or Origin("function", name)

    def restrict(self, allowed: list[Any]) -> None:
        """``tool_choice: allowed_tools``: offer only the tools it lists."""
        keep = {self._choice_name(t) for t in allowed if isinstance(t, dict)}
        self.tools = [t for t in self.tools if t.name in keep]

    def _choice_name(self, raw: dict[str, Any]) -> str | None:
        kind = raw.get("type")
        if kind in ("function", "custom") and isinstance(raw.get("name"), str):
            exact = raw["name"] if raw["name"] in self.origins else None
            inner = [n for n, o in self.origins.items() if o.name == raw["name"] and o.kind == kind]
            return exact or (inner[0] if len(inner) == 1 else None)
        if kind in ("local_shell", "shell", "apply_patch", "tool_search"):
            return next((n for n, o in self.origins.items() if o.kind == kind), None)
        return None

    def choice(self, raw: Any) -> Any:
        """A Responses ``tool_choice`` as chat completions says it (a dropped tool's choice is ``auto``)."""
        if raw is None or raw in ("auto", "none", "required"):
            return raw
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            raise BadRequest("tool_choice must be auto, none, required or {\"type\": \"function\", \"name\": ...}")
        if raw["type"] == "allowed_tools":
            tools = raw.get("tools")
            if not isinstance(tools, list):
                raise BadRequest("tool_choice.tools must be a list")
            self.restrict(tools)
            return "required" if raw.get("mode") == "required" else "auto"
        if raw["type"] in ("function", "custom") and not isinstance(raw.get("name"), str):
            raise BadRequest("tool_choice.name must be a string")
        name = self._choice_name(raw)
        if name is None and raw["type"] in ("function", "custom"):
            raise BadRequest(f"tool_choice names {raw['name']!r}, which is not among the tools")
        return {"type": "function", "function": {"name": name}} if name else "auto"


# ---- conversation items that call or answer those tools ---------------------------------------

CALL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call", "shell_call", "apply_patch_call",
              "tool_search_call")
OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output", "shell_call_output",
                "apply_patch_call_output", "tool_search_output")


def _id(item: dict[str, Any], where: str, *fields: str) -> str:
    for name in fields:
        value = item.get(name)
        if isinstance(value, str) and value:
            return value
    raise BadRequest(f"{where}.{fields[0]} must be a string")


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadRequest(f"{where} must be an object")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise BadRequest(f"{where} must be a string")
    return value


def call_of(item: dict[str, Any], where: str, box: Toolbox) -> ToolCall | None:
    """A call item as a canonical tool call (None for a tool search OpenAI ran itself)."""
    kind = item["type"]
    if kind in ("function_call", "custom_tool_call"):
        name = _text(item.get("name"), f"{where}.name")
        namespace = item.get("namespace") if isinstance(item.get("namespace"), str) else None
        if kind == "custom_tool_call":
            given = json.dumps({"input": _text(item.get("input"), f"{where}.input")})
            return ToolCall(_id(item, where, "call_id"), box.name_of("custom", name, namespace), given, kind="custom")
        arguments = item.get("arguments", "{}")
        if not isinstance(arguments, str):
            raise BadRequest(f"{where}.arguments must be a JSON string")
        return ToolCall(_id(item, where, "call_id"), box.name_of("function", name, namespace), arguments or "{}")
    if kind == "tool_search_call" and item.get("execution") != "client":
        return None
    value: dict[str, Any]
    if kind == "local_shell_call":
        value = {k: v for k, v in _object(item.get("action"), f"{where}.action").items() if k != "type"}
    elif kind == "shell_call":
        value = _object(item.get("action"), f"{where}.action")
    elif kind == "apply_patch_call":
        value = _object(item.get("operation"), f"{where}.operation")
    else:
        arguments = item.get("arguments")
        value = arguments if isinstance(arguments, dict) else {}
    tool = cast(Kind, kind.removesuffix("_call"))
    return ToolCall(_id(item, where, "call_id", "id"), box.name_of(tool, tool), json.dumps(value, ensure_ascii=False))


def _shell_output(output: Any) -> str:
    lines: list[str] = []
    for chunk in output if isinstance(output, list) else []:
        if not isinstance(chunk, dict):
            continue
        for stream in ("stdout", "stderr"):
            if chunk.get(stream):
                lines.append(f"{stream}:\n{chunk[stream]}")
        given = chunk.get("outcome")
        outcome: dict[str, Any] = given if isinstance(given, dict) else {}
        if outcome.get("type") == "exit":
            lines.append(f"exit code: {outcome.get('exit_code')}")
        elif outcome.get("type") == "timeout":
            lines.append("timed out")
    return "\n".join(lines)


def builtin_result(item: dict[str, Any], where: str, box: Toolbox) -> ToolResult | None:
    """The result of a client-run builtin (shell, patch, tool search); None for a server-side search."""
    kind = item["type"]
    if kind == "tool_search_output":
        if item.get("execution") not in (None, "client"):
            return None
        given = item.get("tools")
        found: list[Any] = given if isinstance(given, list) else []
        before = set(box.origins)
        for i, t in enumerate(found):
            box.add(t, f"{where}.tools[{i}]")
        listing = [{"name": t.name, "description": t.description} for t in box.tools if t.name not in before]
        return ToolResult(_id(item, where, "call_id", "id"), json.dumps({"tools_found": listing}, ensure_ascii=False))
    call_id = _id(item, where, "call_id", "id")
    if kind == "shell_call_output":
        return ToolResult(call_id, _shell_output(item.get("output")))
    if kind == "apply_patch_call_output":
        failed = item.get("status") == "failed"
        return ToolResult(call_id, str(item.get("output") or ("failed" if failed else "done")), is_error=failed)
    return ToolResult(call_id, str(item.get("output") or ""))  # local_shell_call_output


# ---- the member's calls, as the items a client expects ------------------------------------------

def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value] if isinstance(value, list) else []


def _some(args: dict[str, Any], *names: str) -> dict[str, Any]:
    return {n: args[n] for n in names if args.get(n) is not None}


def call_item(call: ToolCall, box: Toolbox, done: bool = True) -> dict[str, Any]:
    """The output item for one of the member's calls, by where its tool came from. ``done=False``
    is the item as first announced in a stream (its arguments still empty)."""
    origin = box.origin(call.name)
    status = "completed" if done else "in_progress"
    args = _arguments(call)
    where = {"namespace": origin.namespace} if origin.namespace else {}
    if origin.kind == "custom":
        given = args.get("input", "")
        text = given if isinstance(given, str) else json.dumps(given)
        return {"type": "custom_tool_call", "id": f"ctc_{call.id}", "call_id": call.id, "name": origin.name,
                **where, "input": text if done else "", "status": status}
    if origin.kind == "local_shell":
        action = {"type": "exec", "command": _strings(args.get("command")), "env": args.get("env") or {},
                  **_some(args, "timeout_ms", "working_directory", "user")}
        return {"type": "local_shell_call", "id": f"lsh_{call.id}", "call_id": call.id, "action": action,
                "status": status}
    if origin.kind == "shell":
        action = {"commands": _strings(args.get("commands")), **_some(args, "timeout_ms", "max_output_length")}
        return {"type": "shell_call", "id": f"sh_{call.id}", "call_id": call.id, "action": action, "status": status}
    if origin.kind == "apply_patch":
        operation = {"type": args.get("type") or "update_file", "path": str(args.get("path") or ""),
                     **({"diff": str(args.get("diff") or "")} if args.get("type") != "delete_file" else {})}
        return {"type": "apply_patch_call", "id": f"apc_{call.id}", "call_id": call.id, "operation": operation,
                "status": status}
    if origin.kind == "tool_search":
        return {"type": "tool_search_call", "id": f"tsc_{call.id}", "call_id": call.id, "arguments": args,
                "execution": "client", "status": status}
    return {"type": "function_call", "id": f"fc_{call.id}", "call_id": call.id, "name": origin.name, **where,
            "arguments": (call.arguments or "{}") if done else "", "status": status}


def toolbox(raw_tools: Any) -> Toolbox:
    """The request's ``tools`` array as a Toolbox (the conversation may add to it)."""
    box = Toolbox()
    for i, t in enumerate(tool_defs.entries(raw_tools)):
        box.add(t, f"tools[{i}]")
    return box


__all__ = ["CALL_ITEMS", "HOSTED_ITEMS", "OUTPUT_ITEMS", "Origin", "Toolbox", "builtin_result", "call_item",
           "call_of", "joined", "toolbox"]
