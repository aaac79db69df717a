"""Counting what the SQLite stores ask of ``sqlite3``: the connections they open and the
statements they run (the answer store's and the task store's tests)."""

from __future__ import annotations

from typing import Any

import pytest


class Counted:
    """sqlite3.connect, counting the connections made and the statements they run."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import sqlite3

        self.connections = 0
        self.statements: list[str] = []
        connect = sqlite3.connect

        def counted(*args: Any, **kwargs: Any) -> Any:
            db = connect(*args, **kwargs)
            self.connections += 1
            db.set_trace_callback(self.statements.append)
            return db

        monkeypatch.setattr(sqlite3, "connect", counted)
