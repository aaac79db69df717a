"""The MCP client: a sans-IO session that owns every client protocol rule, its questions,
one connection's I/O, the transports (stdio, Streamable HTTP), OAuth, ``mcp.json`` and
the gateway (McpSource), and McpClient, the lifetime. It imports the shared part, and the
server only where the gateway serves."""
