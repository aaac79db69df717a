"""The toolkit the MCP benchmarks serve with ``toolnexus serve``: one small tool, and (from a
checkout that has them) one resource, one prompt and one tool that runs only as a task.

An older checkout's ``src`` (``--baseline``) serves the ``add`` tool alone: only the
``tools/call`` rows compare old and new.
"""

from __future__ import annotations

from toolnexus import Toolkit, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


toolkit = Toolkit([add])

try:
    from toolnexus.mcp import prompt, resource
except ImportError:  # a checkout from before resources and prompts
    pass
else:

    @resource("bench://note", mime_type="text/plain")
    def note() -> str:
        """A short note."""
        return "a short note"

    @prompt
    def greet(name: str) -> str:
        """Greet someone by name."""
        return f"Hello, {name}!"

    @tool(task_support="required")
    def add_task(a: int, b: int) -> int:
        """Add two integers, as a task (SEP-2663)."""
        return a + b

    toolkit.register(note)
    toolkit.register(greet)
    toolkit.register(add_task)
