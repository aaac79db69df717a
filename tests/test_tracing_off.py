"""Without OpenTelemetry in use, tracing costs nothing: nothing imports it, nothing is sent.

Run in fresh interpreters: one where the API cannot be imported (as if not installed), and
one where it could be but the program never imported it — in both, host calls, a served
call over HTTP and a remote tool run, and ``opentelemetry`` is never loaded.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent(
    """
    import sys

    if sys.argv[1] == "blocked":
        class NotInstalled:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ImportError(f"No module named {name!r} (blocked)")
                return None

        sys.meta_path.insert(0, NotInstalled())

    from toolnexus import Host, Toolkit, tool
    from toolnexus.mcp import HttpServer, McpClient
    from toolnexus.policies import cache

    @tool(read_only=True)
    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

    toolkit = Toolkit([add])
    with Host(toolkit, middleware=[cache()]) as host:
        assert host.call("add", {"a": 1, "b": 2}).output == "3"
    with HttpServer(toolkit, port=0) as server:
        server.start()
        with McpClient(url=server.url, name="srv") as client:
            with Host(Toolkit(client.tools())) as host:
                assert host.call("srv_add", {"a": 2, "b": 3}).output == "5"
    loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
    assert loaded == [], loaded
    if sys.argv[1] == "blocked":
        try:
            Host(toolkit, tracing=True)
        except ValueError as exc:
            assert "tracing=True needs the OpenTelemetry API" in str(exc), exc
            assert "opentelemetry-api" in str(exc), exc
        else:
            raise AssertionError("tracing=True without the API was accepted")
    print("ok")
    """
)


@pytest.mark.parametrize("how", ["blocked", "unused"])
def test_without_opentelemetry_in_use_nothing_imports_it(how: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, how], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
