"""A tool's advanced-tool-use options (``@tool(allowed_callers=..., input_examples=...,
eager_input_streaming=..., grammar=...)``), checked when the tool is made, and written by
the adapters in each provider's shape: Anthropic's ``allowed_callers``/``input_examples``/
``eager_input_streaming``/``cache_control``, OpenAI's ``allowed_callers`` and custom
(grammar) tools, Gemini's ``parametersJsonSchema``, hosted MCP entries; and the turn
shapes that go with them (custom tool calls, Gemini thought signatures)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Grammar, Host, HostedMcp, Toolkit, TurnResult, tool
from toolnexus.errors import InvalidTypeError, InvalidValueError

FIXTURES = Path(__file__).parent / "fixtures" / "providers"


@tool(
    allowed_callers=["direct", "programmatic"],
    input_examples=[{"a": 1, "b": 2}, {"a": -4, "b": 10}],
    eager_input_streaming=True,
)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def plain(x: str) -> str:
    """Echo."""
    return x


@tool(grammar=Grammar("regex", r"^SELECT [a-z_]+ FROM [a-z_]+$"))
def sql(input: str) -> str:
    """Run a tiny SQL query."""
    return f"ran {input}"


def echo(input: str) -> str:
    """Echo the text."""
    return input


# --------------------------------------------------------------------------- bad input


def test_an_example_that_fails_the_input_schema_is_refused_naming_it() -> None:
    with pytest.raises(InvalidValueError) as caught:

        @tool(input_examples=[{"a": 1, "b": 2}, {"a": "one", "b": 2}])
        def add2(a: int, b: int) -> int:
            """Add."""
            return a + b

    message = str(caught.value)
    assert "input_examples[1] of tool 'add2'" in message
    assert 'a: expected integer, got string "one"' in message


def test_an_example_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(InvalidTypeError, match=r"input_examples\[0\].*object"):
        tool(lambda a: a, name="f", input_examples=["a"])  # type: ignore[list-item]


@pytest.mark.parametrize("callers", [["model"], [], "direct"])
def test_an_unknown_caller_is_refused(callers: Any) -> None:
    with pytest.raises((InvalidValueError, InvalidTypeError), match="allowed_callers of tool"):
        tool(lambda x: x, name="f", allowed_callers=callers)


def test_eager_input_streaming_must_be_a_bool() -> None:
    with pytest.raises(InvalidTypeError, match="eager_input_streaming"):
        tool(lambda x: x, name="f", eager_input_streaming="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("syntax", "definition", "problem"),
    [
        # OpenAI's regexes are Rust's regex crate syntax, without lookaround or laziness.
        ("regex", "^(?=a)a$", r"'\(\?=' at 1 is lookaround"),
        ("regex", "^a(?<!b)$", r"'\(\?<!' at 2 is lookaround"),
        ("regex", r"^(a)\1$", r"the backreference '\\1' at 4"),
        ("regex", r"^(?<x>a)\k<x>$", r"the backreference '\\k<' at 8"),
        ("regex", "^a+?$", r"the lazy quantifier '\+\?' at 2"),
        ("regex", "^a{2,3}?$", r"the lazy quantifier '\{2,3\}\?' at 2"),
        ("regex", "^a\nb$", "a line break at 2: a regex grammar must be on one line"),
        ("regex", "(a", r"the group opened at 0 is not closed"),
        ("regex", "a)", r"'\)' at 1 closes no group"),
        ("regex", "[a-z", "the character class opened at 0 is not closed"),
        ("regex", r"^a\Z", r"the escape '\\Z' at 2 is not in Rust's regex syntax"),
        ("regex", "(?#note)a", r"the group '\(\?#' at 0 is not in Rust's regex syntax"),
        ("regex", "*a", "'\\*' at 0 repeats nothing"),
        ("regex", "(?P<1x>a)", "the group name at 4 is not valid"),
        # Lark: the subset OpenAI's grammars (LLGuidance) take.
        ("lark", "expr: NUMBER", "a Lark grammar must define the rule 'start'"),
        ("lark", "start: A\n%declare A", "'%declare' at line 2"),
        ("lark", "start: A\n%import .lib.A", "'%import .lib.A' at line 2"),
        ("lark", 'start: A\nA.2: "a"', "the terminal A at line 2 has a priority"),
        (
            "lark",
            'start: sep{A}\nsep{x}: x ("," x)*\nA: "a"',
            "the rule sep at line 2 is a template",
        ),
        ("lark", "start: W\nW: /[a-z]+?/", r"the regex /\[a-z\]\+\?/ at line 2: the lazy"),
        (
            "lark",
            "start: W\n\nW: /(?<=x)y/",
            r"the regex /\(\?<=x\)y/ at line 3: '\(\?<=' at 0 is lookaround",
        ),
    ],
)
def test_a_grammar_the_provider_would_reject_is_refused_naming_the_tool(
    syntax: str, definition: str, problem: str
) -> None:
    with pytest.raises(InvalidValueError, match=f"^{syntax} grammar of tool 'g': {problem}"):
        tool(echo, name="g", grammar=Grammar(syntax, definition))


@pytest.mark.parametrize(
    "definition",
    [
        # OpenAI's own examples: Rust's named groups, and a Lark grammar with aliases.
        r"^(?P<month>January|February)\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?P<year>\d{4})$",
        'start: expr\nexpr: term (SP ADD SP term)* -> add\n| term\nterm: INT\nSP: " "\n'
        'ADD: "+"\n%import common.INT',
        # What looks like lookaround or laziness but is not: in a class, escaped, quoted,
        # commented out; Rust's flags, classes and escapes.
        r"^[(?=]\(?=[*?]+$",
        r"^(?i)[[:alpha:]&&[^q]]+\p{Greek}\x{10FFFF}\u00e9(?s:.)\\1$",
        'start: "/(?=x)/" WORD SLASH // W: /a+?/\nSLASH: /\\//\n%import common (WORD)\n%ignore " "',
    ],
)
def test_grammars_the_provider_takes_are_accepted(definition: str) -> None:
    syntax = "lark" if definition.startswith("start") else "regex"
    made = tool(echo, name="g", grammar=Grammar(syntax, definition))
    assert made.to_openai(api="responses")["format"]["definition"] == definition


@pytest.mark.parametrize(
    ("syntax", "definition", "problem"),
    [("ebnf", "start: x", "must be 'lark' or 'regex'"), ("regex", "  ", "non-empty")],
)
def test_a_grammar_without_a_known_syntax_or_a_definition_is_refused(
    syntax: str, definition: str, problem: str
) -> None:
    with pytest.raises(InvalidValueError, match=problem):
        Grammar(syntax, definition)


def test_a_grammar_tool_takes_one_string_parameter_named_input() -> None:
    with pytest.raises(InvalidValueError, match="exactly one parameter, input: str"):

        @tool(grammar=Grammar("lark", "start: WORD\n%import common.WORD"))
        def query(text: str, limit: int = 1) -> str:
            """Query."""
            return text


def test_cache_control_must_be_an_ephemeral_breakpoint() -> None:
    with pytest.raises(InvalidValueError, match="cache_control"):
        plain.to_anthropic(cache_control={"type": "persistent"})
    with pytest.raises(InvalidValueError, match="ttl"):
        plain.to_anthropic(cache_control={"type": "ephemeral", "ttl": "1d"})


def test_an_unknown_code_execution_version_is_refused() -> None:
    with pytest.raises(InvalidValueError, match="code_execution must be one of"):
        add.to_anthropic(code_execution="code_execution_20990101")


# --------------------------------------------------------------------------- shapes


def test_anthropic_carries_callers_examples_and_eager_streaming() -> None:
    entry = add.to_anthropic()
    assert entry["allowed_callers"] == ["direct", "code_execution_20260120"]
    assert entry["input_examples"] == [{"a": 1, "b": 2}, {"a": -4, "b": 10}]
    assert entry["eager_input_streaming"] is True
    assert "cache_control" not in entry
    older = add.to_anthropic(code_execution="code_execution_20250825")
    assert older["allowed_callers"] == ["direct", "code_execution_20250825"]
    # A tool that sets none of them gets none of the fields.
    assert sorted(plain.to_anthropic()) == ["description", "input_schema", "name"]


def test_the_toolkits_cache_control_marks_the_last_tool_only() -> None:
    entries = Toolkit([add, plain]).to_anthropic(cache_control={"type": "ephemeral", "ttl": "1h"})
    assert "cache_control" not in entries[0]
    assert entries[1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_programmatic_adds_anthropics_code_execution_tool_of_the_chosen_version() -> None:
    kit = Toolkit([add, plain])
    assert kit.to_anthropic() == kit.to_anthropic(programmatic=False)
    assert all("type" not in entry for entry in kit.to_anthropic())
    entries = kit.to_anthropic(
        programmatic=True,
        code_execution="code_execution_20260521",
        cache_control={"type": "ephemeral"},
    )
    assert entries[0] == {"type": "code_execution_20260521", "name": "code_execution"}
    assert entries[1]["allowed_callers"] == ["direct", "code_execution_20260521"]
    assert [entry.get("name") for entry in entries] == ["code_execution", "add", "plain"]
    # The breakpoint stays on the last tool, so the code-execution tool is cached with it.
    assert "cache_control" in entries[2]
    assert "cache_control" not in entries[0]


def test_programmatic_adds_openais_programmatic_tool_calling_tool() -> None:
    kit = Toolkit([add, plain])
    entries = kit.to_openai(api="responses", programmatic=True)
    assert entries[0] == {"type": "programmatic_tool_calling"}
    assert entries[1:] == kit.to_openai(api="responses")


def test_programmatic_adds_nothing_when_no_tool_allows_code_callers() -> None:
    kit = Toolkit([plain])
    assert kit.to_anthropic(programmatic=True) == kit.to_anthropic()
    assert kit.to_openai(api="responses", programmatic=True) == kit.to_openai(api="responses")


def test_programmatic_is_refused_where_the_provider_has_no_such_tool() -> None:
    with pytest.raises(InvalidValueError, match="programmatic=True needs api='responses'"):
        Toolkit([add]).to_openai(programmatic=True)
    with pytest.raises(InvalidValueError, match="code_execution must be one of"):
        Toolkit([add]).to_anthropic(programmatic=True, code_execution="code_execution_20250522")


def test_programmatic_refuses_a_tool_named_like_the_code_execution_tool() -> None:
    @tool(name="code_execution", allowed_callers=["direct", "programmatic"])
    def run(code: str) -> str:
        """Run code."""
        return code

    with pytest.raises(InvalidValueError, match=r"named 'code_execution'.*rename the tool"):
        Toolkit([run]).to_anthropic(programmatic=True)


def test_programmatic_also_leads_a_list_with_deferred_tools() -> None:
    @tool(defer=True)
    def rare(x: str) -> str:
        """Rarely used."""
        return x

    kit = Toolkit([add, rare])
    entries = kit.to_anthropic(programmatic=True)
    assert entries[0] == {"type": "code_execution_20260120", "name": "code_execution"}
    assert entries[1:] == kit.to_anthropic()


def test_openai_responses_carries_allowed_callers() -> None:
    assert add.to_openai(api="responses")["allowed_callers"] == ["direct", "programmatic"]
    assert "allowed_callers" not in plain.to_openai(api="responses")


def test_a_grammar_tool_is_an_openai_custom_tool() -> None:
    assert sql.to_openai(api="responses") == {
        "type": "custom",
        "name": "sql",
        "description": "Run a tiny SQL query.",
        "format": {
            "type": "grammar",
            "syntax": "regex",
            "definition": "^SELECT [a-z_]+ FROM [a-z_]+$",
        },
    }
    assert sql.to_openai()["custom"]["format"] == {
        "type": "grammar",
        "grammar": {"definition": "^SELECT [a-z_]+ FROM [a-z_]+$", "syntax": "regex"},
    }


def test_a_custom_tool_call_runs_with_its_text_and_answers_with_a_custom_output() -> None:
    response = {
        "output": [
            {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_sql",
             "name": "sql", "input": "SELECT name FROM users"},
        ]
    }  # fmt: skip
    with Host(Toolkit([sql])) as host:
        turn = host.run_turn(response, style="responses")
    assert turn.messages == [
        {"type": "custom_tool_call_output", "call_id": "call_sql",
         "output": "ran SELECT name FROM users"},
    ]  # fmt: skip


@dataclass
class Leaf:
    name: str
    children: list[Leaf]


def test_a_schema_with_anyof_ref_and_defs_reaches_gemini_unmodified() -> None:
    @tool
    def grow(tree: Leaf, label: str | int | None = None) -> str:
        """Grow a tree."""
        return "ok"

    schema = json.loads(json.dumps(grow.input_schema))
    assert "$defs" in schema and "anyOf" in json.dumps(schema) and "$ref" in json.dumps(schema)
    [group] = Toolkit([grow]).to_gemini()
    (declaration,) = group["functionDeclarations"]
    assert declaration == {
        "name": "grow",
        "description": "Grow a tree.",
        "parametersJsonSchema": schema,
    }
    # The subset mapper is still there, chosen explicitly.
    subset = grow.to_gemini(schema="subset")
    assert "parametersJsonSchema" not in subset and "$defs" not in json.dumps(subset)
    with pytest.raises(InvalidValueError, match="schema must be 'json'"):
        grow.to_gemini(schema="openapi")


def test_gemini_thought_signatures_are_kept_across_a_turn() -> None:
    response = json.loads((FIXTURES / "gemini_thought_signature_response.json").read_text())
    with Host(Toolkit([add])) as host:
        turn = host.run_turn(response, style="gemini")
    assert [c.signature for c in turn.calls] == ["Q2lRQmR4ZkFnZXR0aGVmaXJzdHNpZ25hdHVyZQ==", None]
    back = TurnResult.from_json(turn.to_json())
    assert [c.signature for c in back.calls] == [c.signature for c in turn.calls]
    assert [p["functionResponse"]["response"] for p in back.messages[0]["parts"]] == [
        {"output": "42"},
        {"output": "2"},
    ]


def test_a_hosted_mcp_server_in_each_providers_shape() -> None:
    docs = HostedMcp(
        "docs",
        "https://mcp.example.com/mcp",
        allowed_tools=("search",),
        authorization="tok-123",
        description="Product docs",
    )
    assert docs.to_openai() == {
        "type": "mcp",
        "server_label": "docs",
        "server_url": "https://mcp.example.com/mcp",
        "require_approval": "always",
        "allowed_tools": ["search"],
        "authorization": "tok-123",
        "server_description": "Product docs",
    }
    assert docs.to_anthropic_server() == {
        "type": "url",
        "name": "docs",
        "url": "https://mcp.example.com/mcp",
        "authorization_token": "tok-123",
    }
    assert docs.to_anthropic_toolset() == {
        "type": "mcp_toolset",
        "mcp_server_name": "docs",
        "default_config": {"enabled": False},
        "configs": {"search": {"enabled": True}},
    }
    assert "tok-123" not in repr(docs)
    with pytest.raises(InvalidValueError, match="require_approval"):
        HostedMcp("docs", "https://mcp.example.com/mcp", require_approval="sometimes")
    with pytest.raises(InvalidValueError, match="http"):
        HostedMcp("docs", "stdio:server")


def test_mcp_source_describes_its_http_servers_as_hosted_entries(monkeypatch: Any) -> None:
    from toolnexus.mcp import McpSource

    monkeypatch.setenv("DOCS_TOKEN", "secret-1")
    source = McpSource(
        {
            "mcpServers": {
                "docs": {
                    "url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${DOCS_TOKEN}", "X-Team": "core"},
                    "includeTools": ["search"],
                },
                "files": {"command": "mcp-files"},  # stdio: a provider cannot start it
                "off": {"url": "https://off.example.com/mcp", "disabled": True},
            }
        }
    )
    (entry,) = source.hosted(require_approval="never")
    assert entry.to_openai() == {
        "type": "mcp",
        "server_label": "docs",
        "server_url": "https://mcp.example.com/mcp",
        "require_approval": "never",
        "allowed_tools": ["search"],
        "headers": {"X-Team": "core"},
        "authorization": "secret-1",
    }
    assert entry.to_anthropic_server()["authorization_token"] == "secret-1"


def test_a_chat_completions_custom_tool_call_runs_with_its_text() -> None:
    calls = [
        {"id": "call_c", "type": "custom", "custom": {"name": "sql", "input": "SELECT a FROM b"}}
    ]
    with Host(Toolkit([sql])) as host:
        turn = host.run_turn(calls, style="openai")
    assert turn.calls[0].kind == "custom"
    assert turn.messages == [
        {"role": "tool", "tool_call_id": "call_c", "content": "ran SELECT a FROM b"}
    ]
