"""A stdio MCP server with one tool whose name is long: with its server's name it is longer than
chat completions allow, so a member sees it shortened. The tool writes a file (a visible effect)."""

from __future__ import annotations

from pathlib import Path

from mcp.server import MCPServer

server = MCPServer("scribe")
LONG_NAME = "write_the_given_text_into_a_file_in_the_working_folder"


@server.tool(name=LONG_NAME)
def write(path: str, text: str) -> str:
    """Write the text into the file at path (created or replaced)."""
    Path(path).write_text(text)
    return f"wrote {len(text)} characters to {path}"


if __name__ == "__main__":
    server.run()
