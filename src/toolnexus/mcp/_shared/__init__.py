"""What the MCP server and client share: the JSON-RPC codec, the protocol's facts (revisions,
``_meta`` keys, capabilities, header rules), content blocks, the questions (a suspension ↔
an elicitation, both directions), the peer (request ids, waiters, calls in flight) and the
OAuth facts both sides read. Nothing here imports the server or the client."""
