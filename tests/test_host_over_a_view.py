"""A Host made over a ToolView runs that view's tools only: a tool outside the view is
unknown to every call and every meta-tool, the meta-tools search with the view's ranker,
a tool the view defers must be revealed by a search first, and the revealed set is kept
as for a toolkit — across a parked turn too."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from toolnexus import Answer, Host, Request, Tool, ToolContext, Toolkit, ToolResult, TurnResult
from toolnexus import tool as make_tool

ran: list[str] = []


@make_tool
def delete_repo(owner: str, repo: str) -> str:
    """Delete a repository."""
    ran.append("delete_repo")
    return f"deleted {owner}/{repo}"


@make_tool
def create_issue(owner: str, repo: str, title: str) -> str:
    """Create an issue."""
    ran.append("create_issue")
    return f"opened {title!r}"


@make_tool
def close_issue(number: int) -> str:
    """Close an issue."""
    ran.append("close_issue")
    return f"closed {number}"


@make_tool
def ping() -> str:
    """Check the service answers."""
    ran.append("ping")
    return "pong"


def catalog() -> Toolkit:
    toolkit = Toolkit()
    toolkit.register(ping)
    toolkit.namespace("github", "GitHub").register(create_issue, close_issue)
    toolkit.namespace("admin", "Admin").register(delete_repo)
    return toolkit


@pytest.fixture
def kit() -> Toolkit:
    ran.clear()
    return catalog()


def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


ISSUE = {"owner": "o", "repo": "r", "title": "t"}


def test_a_host_over_a_view_runs_its_tools_and_knows_no_other(kit: Toolkit) -> None:
    view = kit.view(namespaces=["github"])
    with Host(view) as host:
        assert host.toolkit is kit and host.view is view
        assert host.call("close_issue", {"number": 7}).output == "closed 7"
        outside = host.call("delete_repo", {"owner": "o", "repo": "r"})
        assert outside.is_error and "unknown tool 'delete_repo'" in outside.output
        # the error suggests the view's tools only: it never says the tool is there
        assert "known tools: create_issue, close_issue" in outside.output
        assert host.call("ping").is_error
        turn = host.run_turn([call("1", "delete_repo", {"owner": "o", "repo": "r"})])
        assert turn.results[0].is_error
    assert ran == ["close_issue"]


def test_the_meta_tools_of_a_host_over_a_view_search_and_run_the_view_only(
    kit: Toolkit,
) -> None:
    view = kit.view(namespaces=["github"], defer=True)
    assert [e["function"]["name"] for e in view.to_openai()] == ["search_tools", "call_tool"]
    with Host(view) as host:
        found = host.run_turn([call("1", "search_tools", {"query": "delete a repository"})])
        listed = json.loads(found.results[0].output)
        assert "delete_repo" not in [each["name"] for each in listed]
        assert "delete_repo" not in found.revealed
        via = {"name": "delete_repo", "arguments": json.dumps({"owner": "o", "repo": "r"})}
        refused = host.run_turn([call("2", "call_tool", via)], revealed=["delete_repo"])
        assert refused.results[0].is_error
        assert "unknown tool 'delete_repo'" in refused.results[0].output
        # the Responses API's client-executed search searches the view too
        response = {
            "output": [
                {
                    "type": "tool_search_call",
                    "call_id": "s1",
                    "execution": "client",
                    "arguments": {"query": "delete a repository"},
                }
            ]
        }
        searched = host.run_turn(response, style="responses")
        (item,) = searched.messages
        names = [t["name"] for each in item["tools"] for t in each.get("tools", [each])]
        assert "delete_repo" not in names and "delete_repo" not in searched.revealed
    assert "delete_repo" not in ran


def test_a_tool_the_view_defers_must_be_revealed_first(kit: Toolkit) -> None:
    view = kit.view(namespaces=["github"], defer=True)  # the toolkit defers nothing
    with Host(view) as host:
        refused = host.run_turn([call("1", "create_issue", ISSUE)])
        assert "is not loaded" in refused.results[0].output
        assert ran == []
        found = host.run_turn([call("2", "search_tools", {"query": "open a new issue"})])
        assert found.revealed[0] == "create_issue"
        later = host.run_turn([call("3", "create_issue", ISSUE)], revealed=found.revealed)
        assert later.results[0].output == "opened 't'"
        assert later.revealed == found.revealed
    assert ran == ["create_issue"]


def test_the_view_s_ranker_answers_the_host_s_searches(kit: Toolkit) -> None:
    def last_first(query: str, candidates: Sequence[Tool], limit: int) -> list[str]:
        return [each.name for each in reversed(candidates)][:limit]

    view = kit.view(namespaces=["github"], defer=True, ranker=last_first)
    with Host(view) as host:
        found = host.run_turn([call("1", "search_tools", {"query": "create an issue"})])
    assert found.revealed == ("close_issue", "create_issue")


def test_a_turn_parked_on_a_view_resumes_with_its_revealed_set(kit: Toolkit) -> None:
    @make_tool
    def deploy(service: str, ctx: ToolContext) -> ToolResult:
        """Deploy a service after asking where."""
        if ctx.answer is None:
            return ToolResult.pending(Request("input", f"Where should {service} go?"))
        return ToolResult.ok(f"deployed {service} to {ctx.answer.data['env']}")

    kit.register(deploy, namespace="github")
    view = kit.view(namespaces=["github"], defer=True)
    secret = "a key shared by both hosts"
    with Host(view, secret=secret) as host:
        found = host.run_turn([call("1", "search_tools", {"query": "deploy a service"})])
        assert "deploy" in found.revealed
        parked = host.run_turn(
            [
                call("2", "deploy", {"service": "api"}),
                call("3", "delete_repo", {"owner": "o", "repo": "r"}),
            ],
            revealed=found.revealed,
        )
    assert parked.pending is not None
    assert parked.results[1].is_error  # outside the view: unknown, even in a parked turn
    back = TurnResult.from_json(parked.to_json())
    with Host(catalog_with(deploy).view(namespaces=["github"], defer=True), secret=secret) as other:
        done = other.resume_turn(back, Answer.accept(back.pending, {"env": "prod"}))
    assert done.error is None, done.error
    assert done.results[0].output == "deployed api to prod"
    assert done.revealed == found.revealed
    assert "delete_repo" not in ran


def catalog_with(extra: Tool) -> Toolkit:
    toolkit = catalog()
    toolkit.register(extra, namespace="github")
    return toolkit


def test_a_host_over_a_view_refuses_a_runner(kit: Toolkit) -> None:
    class Runner:
        def _toolkit_for(self, toolkit: Toolkit, max_rounds: int) -> Toolkit:
            return toolkit

    with pytest.raises(ValueError, match="runner"):
        Host(kit.view(namespaces=["github"]), runner=Runner())  # type: ignore[arg-type]


def test_a_host_over_a_toolkit_still_runs_every_tool(kit: Toolkit) -> None:
    with Host(kit) as host:
        assert host.view.tools() == kit.tools()
        assert host.call("delete_repo", {"owner": "o", "repo": "r"}).output == "deleted o/r"


def test_a_bridge_given_a_view_says_to_give_it_a_host_over_the_view() -> None:
    from toolnexus.bridges._common import host_of
    from toolnexus.errors import InvalidTypeError

    toolkit = Toolkit()
    with pytest.raises(InvalidTypeError, match=r"got a ToolView; give it Host\(view\)"):
        host_of(toolkit.view())  # type: ignore[arg-type]
