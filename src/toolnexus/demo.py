"""The bundled example toolkit, a ready-made REF for the command line.

``toolkit`` holds the reference page's ``crunch``, ``fetchish`` and ``deploy``, an ``async``
tool (``nap``) and one that ignores its cancellation token (``stubborn``); ``toolnexus demo``
runs them through a host.

Example::

    toolnexus list toolnexus.demo:toolkit
    toolnexus call toolnexus.demo:toolkit crunch steps=3
    toolnexus call toolnexus.demo:toolkit deploy          # answers a question at the prompt
"""

from __future__ import annotations

from ._demo import toolkit

__all__ = ["toolkit"]
