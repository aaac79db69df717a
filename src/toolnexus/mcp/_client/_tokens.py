"""Where an MCP client keeps its OAuth tokens: :class:`TokenStore` and two stores.

A store keeps one JSON record per server (by the server's URL): the client registration
at its authorization server, the access and refresh tokens, and what they were issued
for. :class:`MemoryTokenStore` (the default) forgets them with the process;
:class:`FileTokenStore` keeps them in a JSON file only its owner can read (``0600``,
written whole and replaced atomically, one writer at a time across processes), so a
restart needs no new sign-in. Any object with ``load``/``save``/``delete`` is a store —
a keyring, a database, a secrets manager. A store that several processes share may also
offer ``locked(key)`` (a context manager, as :class:`FileTokenStore` does): the client
holds it while it re-reads the record and refreshes, so that two processes never spend
the same refresh token.

A record holds secrets: a store never logs one, and neither does anything that uses it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from ...errors import InvalidTypeError, InvalidValueError

__all__ = ["FileTokenStore", "MemoryTokenStore", "TokenStore"]


@runtime_checkable
class TokenStore(Protocol):
    """Keeps an MCP client's OAuth record for each server (a JSON object), by a key (the
    server's URL). Methods may be called from several threads.

    Example::

        class KeyringStore:
            def load(self, key: str) -> dict[str, Any] | None:
                text = keyring.get_password("my-agent", key)
                return json.loads(text) if text else None

            def save(self, key: str, record: dict[str, Any]) -> None:
                keyring.set_password("my-agent", key, json.dumps(record))

            def delete(self, key: str) -> None:
                keyring.delete_password("my-agent", key)

    A store shared by several processes may also have ``locked(key)``, a context manager
    under which no other process changes ``key``'s record (see :class:`FileTokenStore`):
    the client holds it from re-reading the record to saving a refreshed one.
    """

    def load(self, key: str) -> dict[str, Any] | None:
        """The record saved under ``key``, or ``None``."""

    def save(self, key: str, record: dict[str, Any]) -> None:
        """Keep ``record`` under ``key``, replacing what was there."""

    def delete(self, key: str) -> None:
        """Forget ``key`` (nothing happens when it is unknown)."""


class MemoryTokenStore:
    """Records in this process's memory: gone when it exits (the default store).

    Example::

        store = MemoryTokenStore()
        store.save("https://mcp.example.com/mcp", {"tokens": {"access_token": "…"}})
    """

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def load(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._records.get(key)
            return copy.deepcopy(record) if record is not None else None

    def save(self, key: str, record: dict[str, Any]) -> None:
        with self._lock:
            self._records[key] = copy.deepcopy(record)

    def delete(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)

    def __repr__(self) -> str:
        return f"<MemoryTokenStore {len(self._records)} server(s)>"


class FileTokenStore:
    """Records in a JSON file only its owner can read or write (mode ``0600``, its folder
    made ``0700`` when it is created).

    Each change rewrites the file whole, to a new file in the same folder, then replaces
    it atomically, holding a lock file (``PATH.lock``) so two processes never lose each
    other's changes. :meth:`locked` holds that lock for longer: an MCP client holds it
    while it re-reads its record and refreshes the tokens, so two processes sharing the
    file make one refresh, and the second uses its result. A file that others can read is
    refused, with the command that fixes it; so is one that is not a store's JSON.

    Example::

        store = FileTokenStore("~/.config/my-agent/mcp-tokens.json")
        with store.locked("https://mcp.example.com/mcp"):
            record = store.load("https://mcp.example.com/mcp")  # nobody changes it meanwhile
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidTypeError(f"path must be a str or a path, got {type(path).__name__}")
        self.path: str = os.path.abspath(os.path.expanduser(os.fspath(path)))
        """The file's absolute path."""
        self._lock = threading.RLock()  # the thread that holds the file lock
        self._depth = 0  # how many times that thread entered it (the lock file is one)

    def load(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._read().get(key)
        return record if isinstance(record, dict) else None

    def save(self, key: str, record: dict[str, Any]) -> None:
        with self._locked():
            records = self._read()
            records[key] = record
            self._write(records)

    def delete(self, key: str) -> None:
        with self._locked():
            records = self._read()
            if records.pop(key, None) is not None:
                self._write(records)

    def locked(self, key: str) -> contextlib.AbstractContextManager[None]:
        """Hold the file (every key in it) against changes by other processes and
        threads until the ``with`` ends; this thread's own ``save`` and ``delete`` go on.

        Example::

            with store.locked(url):
                record = store.load(url) or {}
                record["note"] = "changed by one process at a time"
                store.save(url, record)
        """
        return self._locked()

    def _read(self) -> dict[str, Any]:
        try:
            handle = open(self.path, encoding="utf-8")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            return {}
        with handle:
            if os.name != "nt":
                mode = os.fstat(handle.fileno()).st_mode
                if mode & 0o077:
                    raise InvalidValueError(
                        f"the token file {self.path} can be read or written by others (mode "
                        f"{mode & 0o777:04o}): make it yours alone: chmod 600 {self.path}"
                    )
            try:
                records = json.load(handle)
            except ValueError as exc:
                raise InvalidValueError(
                    f"the token file {self.path} is not JSON ({exc}); delete it to start over "
                    "(the servers then ask for a new sign-in)"
                ) from None
        if not isinstance(records, dict):
            raise InvalidValueError(
                f"the token file {self.path} is not a token store's (a JSON object); delete "
                "it to start over"
            )
        return records

    def _write(self, records: dict[str, Any]) -> None:
        folder = os.path.dirname(self.path)
        if not os.path.isdir(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)
            with contextlib.suppress(OSError):
                os.chmod(folder, 0o700)  # makedirs' mode is subject to the umask
        handle, draft = tempfile.mkstemp(prefix=".tokens-", dir=folder)  # created 0600
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(records, out, indent=1, sort_keys=True)
                out.flush()
                os.fsync(out.fileno())
            os.replace(draft, self.path)
        finally:
            if os.path.exists(draft):
                os.unlink(draft)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time across threads and processes (POSIX ``flock`` on
        ``PATH.lock``); a thread that holds it already enters again."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            try:
                import fcntl
            except ImportError:  # Windows: one process at a time is the caller's to keep
                yield
                return
            folder = os.path.dirname(self.path)
            os.makedirs(folder, mode=0o700, exist_ok=True)
            descriptor = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
                self._depth = 1
                yield
            finally:
                self._depth = 0
                os.close(descriptor)  # closing releases the lock

    def __repr__(self) -> str:
        return f"<FileTokenStore {self.path}>"
