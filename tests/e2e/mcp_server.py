"""A tiny stdio MCP server for recording MCP tool calls of the real Copilot CLI offline.

    python tests/e2e/mcp_server.py            # serves on stdin/stdout

Two tools, so that one scenario (`mcp_tools`, tests/e2e/copilot.py) shows both a good call and
a server that dies in the middle of one:

- `lookup(key)` answers `value-of-<key>`;
- `crash(reason)` exits the server process (status 3) before answering, as a crashed server
  would: the CLI reports the call as failed ("MCP transport closed before the tool responded").

The CLI names them `<server>-lookup` and `<server>-crash` (the server's name is the key of its
entry in the MCP configuration). Needs the `mcp` package (2.x: `MCPServer`; 1.x: `FastMCP`).
Not imported by the tests: the CLI starts it as a child process.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def build() -> Any:
    """The server, from whichever `mcp` API is installed."""
    try:
        from mcp.server.mcpserver import MCPServer

        server: Any = MCPServer("otel-bridge-demo")
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP

        server = FastMCP("otel-bridge-demo")

    @server.tool()
    def lookup(key: str) -> str:
        """Look a key up in the demo table."""
        return f"value-of-{key}"

    @server.tool()
    def crash(reason: str) -> str:
        """Crash the server (for tests): it exits before answering."""
        sys.stdout.flush()
        os._exit(3)

    return server


if __name__ == "__main__":
    build().run("stdio")
