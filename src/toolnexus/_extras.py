"""How to install an optional extra's packages: the one place install hints are written.

This distribution (``toolnexus-contract``) is not on the package index yet, so a hint never
names the distribution with an extra: it names the extra's own requirements, as
the installed distribution's metadata lists them (``pyproject.toml`` stays their one
source), and falls back to what the caller names for a copy without metadata (vendored).
"""

from __future__ import annotations

__all__ = ["extra_requirements", "install_hint"]

DISTRIBUTION = "toolnexus-contract"


def extra_requirements(extra: str) -> list[str]:
    """The requirements of ``extra`` as the installed distribution lists them, e.g.
    ``["langchain-core>=1.0", "langgraph>=1.0"]``; ``[]`` without metadata (a vendored copy).

    Example::

        >>> "redis>=5.0" in extra_requirements("redis") or extra_requirements("redis") == []
        True
    """
    from importlib import metadata

    try:
        listed = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return []
    marker = f'extra == "{extra}"'
    return [each.split(";")[0].strip() for each in listed if marker in each]


def install_hint(extra: str, *fallback: str) -> str:
    """``pip install …`` for the packages of ``extra`` (each quoted for a shell when it
    needs it), then ``(the 'extra' extra)``; ``fallback`` names them when no metadata does.

    Example::

        >>> install_hint("no-such-extra", "somepackage>=2")
        "pip install 'somepackage>=2' (the 'no-such-extra' extra)"
    """
    packages = extra_requirements(extra) or list(fallback)
    shown = " ".join(f"'{each}'" if set(each) & set("<>=!~[ ") else each for each in packages)
    return f"pip install {shown} (the {extra!r} extra)"
