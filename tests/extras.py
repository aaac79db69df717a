"""One rule for tests that need an optional extra (the MCP SDK, provider SDKs, frameworks).

A module that needs an extra calls :func:`require` before importing the extra's packages:
without them the module is skipped, except when its ``TOOLNEXUS_REQUIRE_*`` variable is
``1`` (``.ci/run`` sets it after installing the extra), where a missing package fails the
run instead, so CI can never go green by skipping. Example::

    from extras import require

    require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "anyio", "mcp")

    from mcp import Client
"""

from __future__ import annotations

import importlib
import os

import pytest


def require(env: str, extra: str, *modules: str) -> None:
    """Import each of ``modules``; if one is missing, skip the calling module (or fail
    when ``env`` is ``1``), naming the module and the install command."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # pragma: no cover - depends on the environment
            install = f"pip install '.[test,{extra}]'"
            if os.environ.get(env) == "1":
                pytest.fail(
                    f"{env}=1 but {name} cannot be imported ({exc}); install the extra: {install}",
                    pytrace=False,
                )
            pytest.skip(f"{name} is not installed ({install})", allow_module_level=True)


def server_url(env: str, require_env: str, extra: str, *modules: str) -> str:
    """The URL of a real server in ``env`` (for one test, not a module): skip the calling
    test when it is unset or ``modules`` do not import, or fail when ``require_env`` is
    ``1`` (``.ci/run`` sets it where it starts the servers)."""
    problem = None
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            problem = f"{name} cannot be imported ({exc}); install: pip install '.[test,{extra}]'"
            break
    url = os.environ.get(env, "").strip()
    if problem is None and not url:
        problem = f"{env} is not set (python tests/store_servers.py start DIR prints it)"
    if problem is None:
        return url
    if os.environ.get(require_env) == "1":
        pytest.fail(f"{require_env}=1 but {problem}", pytrace=False)
    pytest.skip(problem)
