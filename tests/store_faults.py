"""Faults the store tests inject into a server store (PostgreSQL or Redis)."""

from __future__ import annotations

import contextlib
from typing import Any


class Lost:
    """Loses the reply of ``store``'s next command: it runs on the server, then the
    connection "breaks" before the reply comes back. ``times`` counts the replies lost."""

    def __init__(self, store: Any) -> None:
        self.times = 0
        if hasattr(store, "_server"):  # Redis: the client's next command
            import redis

            client = store._server.client
            real = client.execute_command

            def run_then_break(*args: Any, **kwargs: Any) -> Any:
                client.execute_command = real
                real(*args, **kwargs)
                self.times += 1
                raise redis.ConnectionError("Connection closed by server.")

            client.execute_command = run_then_break
            return
        import psycopg

        pool = store._db._pool  # Postgres: the pool's next connection's next statement
        real_connection = pool.connection

        @contextlib.contextmanager
        def connection_then_break(*args: Any, **kwargs: Any) -> Any:
            pool.connection = real_connection
            with real_connection(*args, **kwargs) as db:
                real_execute = db.execute

                def execute_then_break(query: Any, params: Any = None) -> Any:
                    real_execute(query, params)
                    self.times += 1
                    raise psycopg.OperationalError("server closed the connection unexpectedly")

                db.execute = execute_then_break
                try:
                    yield db
                finally:
                    db.execute = real_execute

        pool.connection = connection_then_break
