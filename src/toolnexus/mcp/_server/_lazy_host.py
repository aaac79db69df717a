"""The host a server's calls run on, made with the first call (importing the host costs
more than a server's start-up). Its own module: the session, the tasks and the call bridge
all name it, and the bridge imports the session."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..._host import Host
    from ..._toolkit import Toolkit
    from ._options import HostOptions

__all__ = ["LazyHost"]


class LazyHost:
    """The host a server's calls run on, made on first use from its settings.

    ``warm_up()`` makes it on a daemon thread ahead of the first call (the stdio server
    does so once its first answer is out); ``close()`` closes it, and a host made after
    that (a line still handled as the server ends) is closed at once.
    """

    def __init__(self, toolkit: Toolkit, settings: HostOptions) -> None:
        self._toolkit = toolkit
        self._settings = settings
        self._host: Host | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._warm_up: threading.Thread | None = None

    def get(self) -> Host:
        host = self._host
        if host is None:
            with self._lock:
                host = self._host
                if host is None:
                    from ..._host import Host

                    settings = self._settings
                    host = self._host = Host(
                        self._toolkit,
                        timeout_ms=settings.timeout_ms,
                        secret=settings.secret,
                        answer_store=settings.answer_store,
                        max_rounds=settings.max_rounds,
                        middleware=settings.middleware,
                        tool_middleware=settings.tool_middleware,
                    )
                    if self._closed:
                        host.close()
        return host

    def warm_up(self) -> None:
        """Make the host on a thread of its own (once), unless it is made or closed."""
        if self._warm_up is not None or self._host is not None:
            return
        thread = threading.Thread(target=self.get, name="toolnexus-mcp-warm-up", daemon=True)
        with self._lock:
            if self._warm_up is not None or self._closed:
                return
            self._warm_up = thread
            thread.start()

    def close(self) -> None:
        """Close the host (waiting for a warm-up under way); later hosts are closed too."""
        with self._lock:
            self._closed = True
            warm_up = self._warm_up
        if warm_up is not None:
            warm_up.join()
        host = self._host
        if host is not None:
            host.close()
