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
