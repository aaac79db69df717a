"""The :class:`AnswerStore` protocol: what :class:`~toolnexus.Host` needs of an answer
store. A protocol needs ``typing``, so it loads with the first use of its name, not with
every host (``stores/_answers.py`` is loaded with every host)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["AnswerStore"]


@runtime_checkable
class AnswerStore(Protocol):
    """Where used answers are remembered, so each binding resumes a call at most once.

    One method: ``consume(key, expires_at)`` records ``key`` (an opaque ASCII string of at
    most 64 characters) and returns ``True`` the first time, ``False`` when it is recorded
    already. It must be atomic — two processes consuming the same key at once: exactly one
    gets ``True`` — and may forget a key once the time (``time.time()`` seconds) passes
    ``expires_at``: an answer is refused as expired after that anyway. When it cannot tell
    (its server is down), it raises (:class:`~toolnexus.StoreUnavailableError` by
    preference): the resume is then refused and nothing is used up. Optional:
    ``release(key)`` forgets a key, for a resumed tool that says it did not use its answer
    (``metadata["answer"] == "unused"``: a remote server refused it unused); without it
    such an answer stays used. The stores of this package all have it.

    Example (a store of your own)::

        class DictStore:
            def __init__(self) -> None:
                self.used: dict[str, float] = {}

            def consume(self, key: str, expires_at: float) -> bool:
                if key in self.used:  # atomic enough for one thread, not for a fleet
                    return False
                self.used[key] = expires_at
                return True

        host = Host(toolkit, secret=key, answer_store=DictStore())
    """

    def consume(self, key: str, expires_at: float) -> bool:
        """Record ``key``; True the first time, False when it was recorded already."""
        ...
