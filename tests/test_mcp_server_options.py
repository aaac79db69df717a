"""ServerOptions as small frozen groups: hashable values, read-only copies of what a caller
passed, flat keywords that fill the groups, and each group's own checks."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from toolnexus import Toolkit, tool
from toolnexus.mcp import (
    AccessOptions,
    HostOptions,
    HttpOptions,
    ProtectedResource,
    ServerOptions,
    ServerSession,
    TaskOptions,
)
from toolnexus.mcp._server._lazy_host import LazyHost
from toolnexus.policies import Next, ToolCall
from toolnexus.stores import MemoryTaskStore

GROUPS = {"host": HostOptions, "tasks": TaskOptions, "http": HttpOptions, "access": AccessOptions}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def audit(call: ToolCall, call_next: Next) -> Any:
    return call_next(call)


def verify(token: str) -> bool:
    return token == "ok"


def some_of_each() -> dict[str, Any]:
    """A value of each class with its mapping and list fields given as plain dicts/lists."""
    resource = ProtectedResource(["https://login.example.com"], verify)
    return {
        "host": HostOptions(
            timeout_ms=5_000,
            secret=[b"k" * 32, b"j" * 32],
            middleware=[audit],
            tool_middleware={"add": [audit]},
        ),
        "tasks": TaskOptions(task_after_ms=10, task_store=MemoryTaskStore()),
        "http": HttpOptions(allowed_hosts=["tools.example.com"], allowed_origins=["https://a.b"]),
        "access": AccessOptions(auth=resource),
    }


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_every_group_hashes_and_compares_by_value(group: str) -> None:
    value = some_of_each()[group]
    same = dataclasses.replace(value)
    assert value == same and hash(value) == hash(same)
    assert value != GROUPS[group]()  # a field changed from its default counts


def test_server_options_hash_and_compare_with_every_group_filled() -> None:
    groups = some_of_each()
    options = ServerOptions(name="calc", **groups)
    assert hash(options) == hash(ServerOptions(name="calc", **groups))
    assert options == ServerOptions(name="calc", **groups)
    assert options != options.replace(timeout_ms=6_000)
    assert {options: "a dict key"}[ServerOptions(name="calc", **groups)] == "a dict key"


def test_a_callers_dicts_and_lists_changed_afterwards_change_nothing() -> None:
    # The options used to keep the caller's tool_middleware dict: hash() raised, and a
    # change to the dict after construction reached the server.
    rules: dict[str, list[Any]] = {"add": [audit]}
    middleware = [audit]
    hosts = ["tools.example.com"]
    keys: list[bytes | str] = [b"k" * 32]
    key = bytearray(b"b" * 32)
    options = ServerOptions(
        tool_middleware=rules, middleware=middleware, allowed_hosts=hosts, secret=keys
    )
    one_key = HostOptions(secret=key)
    before = hash(options), hash(one_key)
    rules["add"].append(audit)
    rules["*"] = [audit]
    middleware.append(audit)
    hosts.append("evil.example.com")
    keys.append(b"x" * 32)
    key[:] = b"x" * 32
    assert options.host.tool_middleware == {"add": (audit,)}
    assert options.host.middleware == (audit,)
    assert options.http.allowed_hosts == ("tools.example.com",)
    assert options.host.secret == (b"k" * 32,)
    assert one_key.secret == b"b" * 32
    assert (hash(options), hash(one_key)) == before
    with pytest.raises(TypeError, match="read-only"):
        options.host.tool_middleware["*"] = (audit,)  # type: ignore[index]


def test_flat_keywords_fill_their_groups() -> None:
    flat = ServerOptions(
        name="calc",
        timeout_ms=5_000,
        max_rounds=2,
        task_after_ms=10,
        max_requests=8,
        allowed_hosts=["tools.example.com"],
        token="s3cr3t",
    )
    grouped = ServerOptions(
        name="calc",
        host=HostOptions(timeout_ms=5_000, max_rounds=2),
        tasks=TaskOptions(task_after_ms=10),
        http=HttpOptions(max_requests=8, allowed_hosts=("tools.example.com",)),
        access=AccessOptions(token="s3cr3t"),
    )
    assert flat == grouped
    assert flat.host.timeout_ms == 5_000 and flat.http.max_requests == 8
    # A flat keyword and a group that leaves that field at its default combine.
    both = ServerOptions(timeout_ms=5_000, host=HostOptions(max_rounds=2))
    assert both.host == HostOptions(timeout_ms=5_000, max_rounds=2)


def test_a_setting_given_flat_and_in_its_group_is_an_error_naming_both() -> None:
    with pytest.raises(
        ValueError,
        match=r"timeout_ms is given twice, as the keyword timeout_ms=\.\.\. and in "
        r"host=HostOptions\(timeout_ms=\.\.\.\)",
    ):
        ServerOptions(timeout_ms=1_000, host=HostOptions(timeout_ms=2_000))
    with pytest.raises(ValueError, match=r"in access=AccessOptions\(token=\.\.\.\)"):
        ServerOptions(token="one", access=AccessOptions(token="two"))


def test_the_flat_keywords_are_exactly_the_groups_fields() -> None:
    own = {each.name for each in dataclasses.fields(ServerOptions)}
    flat = [
        name
        for name, each in ServerOptions.__dataclass_fields__.items()
        if name not in own and name != "_"
    ]
    in_groups = [each.name for kind in GROUPS.values() for each in dataclasses.fields(kind)]
    assert sorted(flat) == sorted(in_groups)
    assert len(set(in_groups)) == len(in_groups)  # no field in two groups
    assert not own & set(in_groups)
    assert own >= set(GROUPS)


def test_replace_changes_a_flat_setting_in_its_group_and_keeps_the_rest() -> None:
    options = ServerOptions(name="calc", timeout_ms=5_000, max_rounds=3, max_requests=8)
    quick = options.replace(timeout_ms=1_000)
    assert quick.host == HostOptions(timeout_ms=1_000, max_rounds=3)
    assert quick.http.max_requests == 8 and quick.name == "calc"
    wider = dataclasses.replace(options, http=HttpOptions(max_requests=256))
    assert wider.http.max_requests == 256 and wider.host == options.host
    assert options.replace(name="other").host == options.host


def test_reading_a_flat_keyword_back_says_where_it_lives() -> None:
    options = ServerOptions(token="s3cr3t")
    with pytest.raises(TypeError, match=r"read options\.access\.token"):
        bool(options.token)  # type: ignore[attr-defined]
    assert options.access.token == "s3cr3t"


def test_positional_arguments_stop_after_the_instructions() -> None:
    assert ServerOptions("calc", "9.9", "be brief").instructions == "be brief"
    with pytest.raises(TypeError):
        ServerOptions("calc", "9.9", None, 100)  # type: ignore[misc]


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_a_group_of_the_wrong_type_is_refused_naming_its_class(group: str) -> None:
    with pytest.raises(
        TypeError, match=rf"ServerOptions\.{group} must be a .*{GROUPS[group].__name__}"
    ):
        ServerOptions(**{group: {}})


# The checks each group makes, with the messages ServerOptions gave for these fields: the
# field is named in the group that holds it, and the flat keyword gets the same message.
CHECKS = [
    (
        HostOptions,
        {"timeout_ms": -1},
        "HostOptions.timeout_ms must be None or an int >= 0 (milliseconds), got -1",
    ),
    (HostOptions, {"max_rounds": 0}, "HostOptions.max_rounds must be an int >= 1, got 0"),
    (
        HostOptions,
        {"answer_store": object()},
        "HostOptions.answer_store must have a consume(key, expires_at) method "
        "(an AnswerStore), got object",
    ),
    (
        HostOptions,
        {"tool_middleware": ["add"]},
        "tool_middleware must map tool names (or globs) to lists of middleware, got list",
    ),
    (
        TaskOptions,
        {"task_after_ms": -1},
        "TaskOptions.task_after_ms must be an int >= 0 (milliseconds), got -1",
    ),
    (
        TaskOptions,
        {"task_ttl_ms": 0},
        "TaskOptions.task_ttl_ms must be an int >= 1 (milliseconds), got 0",
    ),
    (
        TaskOptions,
        {"max_stored_tasks_per_owner": True},
        "TaskOptions.max_stored_tasks_per_owner must be an int >= 1, got True",
    ),
    (
        TaskOptions,
        {"task_store": object()},
        "TaskOptions.task_store must be a TaskStore (create, get, update, purge), got object",
    ),
    (
        HttpOptions,
        {"keep_alive_ms": -1},
        "HttpOptions.keep_alive_ms must be an int >= 0 (milliseconds), got -1",
    ),
    (HttpOptions, {"max_streams": 0}, "HttpOptions.max_streams must be an int >= 1, got 0"),
    (
        HttpOptions,
        {"allowed_hosts": "example.com"},
        "HttpOptions.allowed_hosts must be a list of strings, not one string: ['example.com']",
    ),
    (
        HttpOptions,
        {"allowed_origins": [" "]},
        "HttpOptions.allowed_origins must hold non-empty strings, got ' '",
    ),
    (AccessOptions, {"token": " "}, "AccessOptions.token must be a non-empty str or None"),
    (AccessOptions, {"token": "a b"}, "AccessOptions.token cannot be sent in an HTTP header"),
    (
        AccessOptions,
        {"verify_token": 1},
        "AccessOptions.verify_token must be callable or None, got int",
    ),
    (
        AccessOptions,
        {"auth": 1},
        "AccessOptions.auth must be a toolnexus.mcp.ProtectedResource or None, got int",
    ),
    (
        AccessOptions,
        {"insecure_no_auth": "yes"},
        "AccessOptions.insecure_no_auth must be a bool, got str",
    ),
    (
        AccessOptions,
        {"token": "t", "auth": ProtectedResource(["https://login.example.com"], verify)},
        "AccessOptions: give one of token, verify_token and auth",
    ),
]


@pytest.mark.parametrize("kind, settings, message", CHECKS)
def test_each_group_checks_its_own_fields(
    kind: type[Any], settings: dict[str, Any], message: str
) -> None:
    with pytest.raises((ValueError, TypeError)) as raised:
        kind(**settings)
    assert str(raised.value).startswith(message)
    with pytest.raises((ValueError, TypeError)) as flat:
        ServerOptions(**settings)
    assert str(flat.value) == str(raised.value)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"name": ""}, "ServerOptions.name must be a non-empty str, got ''"),
        ({"instructions": 1}, "ServerOptions.instructions must be a str or None, got int"),
        ({"page_size": 0}, "ServerOptions.page_size must be an int >= 1, got 0"),
        (
            {"state_ttl_ms": -1},
            "ServerOptions.state_ttl_ms must be an int >= 0 (milliseconds), got -1",
        ),
        (
            {"max_message_bytes": 10},
            "ServerOptions.max_message_bytes must be an int >= 64 (bytes), got 10",
        ),
        (
            {"max_inflight_bytes": 0},
            "ServerOptions.max_inflight_bytes must be an int >= 1 (bytes), got 0",
        ),
    ],
)
def test_server_options_check_their_own_fields(settings: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError)) as raised:
        ServerOptions(**settings)
    assert str(raised.value) == message


def test_the_host_and_the_session_read_the_host_group() -> None:
    settings = HostOptions(timeout_ms=4_321, max_rounds=3, secret=b"k" * 32)
    lazy = LazyHost(Toolkit([add]), settings)
    try:
        host = lazy.get()
        assert host._timeout_ms == 4_321
    finally:
        lazy.close()
    session = ServerSession(Toolkit([add]), ServerOptions(host=settings))
    assert session._ctx.questions._max_rounds == 3


def test_search_is_a_bool_and_off_by_default():
    assert ServerOptions().search is False
    assert ServerOptions(search=True).search is True
    with pytest.raises(TypeError, match=r"ServerOptions\.search must be True or False, got str"):
        ServerOptions(search="yes")  # type: ignore[arg-type]
