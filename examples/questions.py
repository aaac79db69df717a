"""Tools that ask a human: one per kind of question the command line answers at the prompt.

A tool asks by returning ``ToolResult.pending(Request(...))``; the host asks the human and
runs the tool once more with ``ctx.answer`` set — only after a "yes": a "no" ends the call
with ``declined/expired: <prompt>`` and the tool never sees it, so none of these tools has a
decline branch. Try them from the folder above
``examples/``::

    toolnexus call examples/questions.py deploy service=web     # fields, one by one
    toolnexus call examples/questions.py delete path=/tmp/x     # approval: yes/no
    toolnexus call examples/questions.py inbox                  # authorization: a url
    toolnexus call examples/questions.py greet                  # a free-text question

Or ask now and answer later, from another shell (the request is bound to the call with
your per-user key, made on first use; see docs/cli.md)::

    toolnexus call examples/questions.py deploy service=web --no-input > req.json
    echo '{"ok": true, "data": {"env": "staging"}}' > ans.json
    toolnexus resume examples/questions.py deploy service=web --request @req.json --answer @ans.json
"""

from __future__ import annotations

from toolnexus import Request, ToolContext, ToolResult, tool

ENVIRONMENTS = {
    "type": "object",
    "properties": {
        "env": {
            "type": "string",
            "enum": ["staging", "production"],
            "default": "staging",
            "description": "where to deploy",
        },
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
    },
    "required": ["env"],
}


@tool(destructive=True)
def deploy(service: str = "web", ctx: ToolContext | None = None) -> ToolResult:
    """Deploy a service, asking where to and how many replicas.

    Args:
        service: the service to deploy.
    """
    answer = ctx.answer if ctx is not None else None
    if answer is None:
        return ToolResult.pending(
            Request("input", f"Deploy {service} where?", data={"schema": ENVIRONMENTS})
        )
    data = answer.data or {}
    return ToolResult.ok(
        f"deployed {service} to {data.get('env')} with {data.get('replicas', 1)} replica(s)"
    )


@tool(destructive=True)
def delete(path: str, ctx: ToolContext | None = None) -> ToolResult:
    """Delete a file (pretend), after the human approves.

    Args:
        path: the file to delete.
    """
    answer = ctx.answer if ctx is not None else None
    if answer is None:
        return ToolResult.pending(Request("approval", f"Delete {path}?"))
    return ToolResult.ok(f"deleted {path} (pretend)")


@tool(read_only=True)
def inbox(ctx: ToolContext | None = None) -> ToolResult:
    """Count unread mail, after the human signs in at a url (out of band)."""
    answer = ctx.answer if ctx is not None else None
    if answer is None:
        return ToolResult.auth_required(
            "https://mail.example.com/login?client=toolnexus-example", "Sign in to read your mail"
        )
    return ToolResult.ok("3 unread messages")


@tool(read_only=True)
def greet(ctx: ToolContext | None = None) -> ToolResult:
    """Greet the human by name, asking for it first (a question with no schema)."""
    answer = ctx.answer if ctx is not None else None
    if answer is None:
        return ToolResult.pending(Request("question", "What is your name?"))
    return ToolResult.ok(f"hello, {(answer.data or {}).get('answer', 'stranger')}")
