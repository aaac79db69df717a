"""The reference for ``benchmarks/mcp_http.py``: the server of ``mcp_sdk_server.py`` (the
same ``add`` tool, ``bench://note`` resource and ``greet`` prompt, on the official MCP Python
SDK: ``pip install mcp``) served over Streamable HTTP, with ``MCPServer``'s default settings:
stateful sessions, responses as event streams.

``python benchmarks/mcp_http_sdk_server.py PORT``
"""

from __future__ import annotations

import logging
import sys

from mcp_sdk_server import server  # this folder is on sys.path when run as a script

if __name__ == "__main__":
    logging.disable(logging.WARNING)
    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
