"""What a type checker sees of Host.run_turn's input: run by pytest for behaviour, and checked
by ``mypy --strict`` in CI (``MYPYPATH=src mypy --strict tests/typed``).

A provider's list of calls, a whole message dict and an SDK-like object (anything with the
attribute its style reads) type-check; a value that is none of those is refused by the
checker — each ``# type: ignore[arg-type]`` is needed, and strict mode reports one that is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolnexus import Host, Toolkit, tool
from toolnexus._turns import TurnInput


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
}


@dataclass
class ChatMessage:
    """Stands in for the OpenAI SDK's ChatCompletionMessage: it has ``tool_calls``."""

    tool_calls: list[dict[str, Any]]


def test_a_list_a_message_dict_and_an_sdk_like_object_are_turn_inputs() -> None:
    calls: TurnInput = [CALL]
    with Host(Toolkit([add])) as host:
        for given in (calls, {"role": "assistant", "tool_calls": [CALL]}, ChatMessage([CALL])):
            turn = host.run_turn(given, style="openai")
            assert turn.messages == [{"role": "tool", "tool_call_id": "call_1", "content": "5"}]


def test_a_value_that_holds_no_calls_is_refused_by_the_checker_and_at_run_time() -> None:
    with Host(Toolkit([add])) as host:
        try:
            host.run_turn(42, style="openai")  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            assert "42" in str(exc) or "int" in str(exc)
        else:
            raise AssertionError("run_turn took 42 as a turn")
