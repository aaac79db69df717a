"""The MCP server: a sans-IO session that is a method table over feature handlers, the
call bridge to the host, its options, tasks, resources and prompts, auth, and the
transports (stdio, the embedded HTTP server, the ASGI app). It imports the shared part,
never the client."""
