"""The house's shape, kept by a test: no import circle, and no arrow up.

Every ``import`` in ``src/toolnexus`` counts — at module top, inside a function (a lazy
import), and under ``TYPE_CHECKING`` (a type-only import is still knowledge of the module
it names). Each module belongs to one layer of ``docs/architecture.md``; a module may import
its own layer and those below it, never one above. A subpackage's ``__init__.py`` is of
its subpackage's layer (``toolnexus.mcp`` is the MCP layer's public face, which the layers
above use); ``toolnexus/__init__.py`` is above them all, and nothing inside imports it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolnexus

SRC = Path(toolnexus.__file__).parent

# Lowest first. A top-level module is named; a subpackage's modules go with its prefix.
LAYERS: list[tuple[str, set[str]]] = [
    (
        "contract",
        {
            "errors", "_cancellation", "_suspension", "_parts", "_result", "_context",
            "_principal", "_scopes", "_frozen", "_wire", "_pointer", "_extras", "_log", "_timers",
            "_version", "_aio",
        },
    ),
    (
        "tools",
        {
            "validation", "_ecma", "_json_formats", "_formats", "_docstrings", "_conversion",
            "_schema", "_tool_use", "_tools", "_adapters", "_search", "_views", "_toolkit",
            "_uri_template", "_frontmatter", "_skills", "_http_tools", "_openapi",
        },
    ),
    ("policies", {"_tracing", "_chain", "_policies", "policies"}),
    ("stores", {"stores"}),
    (
        "host",
        {
            "_loop_rule", "_binding", "_turns", "_turn_search", "_pool", "_call", "_host",
            "testing",
        },
    ),
    ("mcp", {"mcp"}),
    ("integrations", {"temporal", "bridges"}),
    ("edges", {"_cli", "__main__", "_demo", "demo"}),
]  # fmt: skip


def module_files() -> dict[str, Path]:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = module_files()


def imports_of(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """Each toolnexus module ``name`` imports, with the line: lazy and type-only too."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "toolnexus":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "toolnexus":
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield (submodule if submodule in MODULES else target), node.lineno


EDGES = {
    name: {(target, line) for target, line in imports_of(name, path) if target != name}
    for name, path in MODULES.items()
}


def layer_of(name: str) -> int:
    if name == "toolnexus":
        return len(LAYERS)  # the package's face, above everything: nothing imports it
    parts = name.split(".")[1:]
    for index, (_, members) in enumerate(LAYERS):
        if parts and parts[0] in members:
            return index
    raise AssertionError(
        f"{name} belongs to no layer: add it to LAYERS in {Path(__file__).name} and to "
        "the picture in docs/architecture.md"
    )


def test_every_module_has_a_layer():
    for name in MODULES:
        layer_of(name)


def test_no_module_imports_a_layer_above_its_own():
    breaches = []
    for name, targets in EDGES.items():
        if name == "toolnexus":
            continue
        for target, line in sorted(targets):
            if layer_of(target) > layer_of(name):
                into = "the package" if target == "toolnexus" else LAYERS[layer_of(target)][0]
                breaches.append(
                    f"{MODULES[name].relative_to(SRC.parent)}:{line}: {name} "
                    f"({LAYERS[layer_of(name)][0]}) imports {target} ({into})"
                )
    assert breaches == [], "imports that run up a layer:\n" + "\n".join(breaches)


# Inside mcp/: the shared protocol, the server and the client are three folders; each side
# imports the shared part, never the other side, and the shared part imports neither.
MCP_PARTS = {"_shared": set(), "_server": {"_shared"}, "_client": {"_shared"}}


def test_the_mcp_server_and_client_share_only_the_shared_part():
    crossings = []
    for name, targets in EDGES.items():
        parts = name.split(".")
        if parts[:2] != ["toolnexus", "mcp"] or len(parts) < 4 or parts[2] not in MCP_PARTS:
            continue
        for target, line in sorted(targets):
            into = target.split(".")
            if into[:2] != ["toolnexus", "mcp"] or len(into) < 3 or into[2] not in MCP_PARTS:
                continue
            if into[2] != parts[2] and into[2] not in MCP_PARTS[parts[2]]:
                crossings.append(
                    f"{MODULES[name].relative_to(SRC.parent)}:{line}: imports {target}"
                )
    assert crossings == [], "mcp parts that import across:\n" + "\n".join(crossings)


def test_no_import_circle():
    graph = {name: {target for target, _ in targets} for name, targets in EDGES.items()}
    circles = [sorted(group) for group in strongly_connected(graph) if len(group) > 1]
    assert circles == [], f"modules that import each other, directly or around: {circles}"


def test_the_circle_check_finds_a_circle():
    groups = strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert sorted(sorted(group) for group in groups if len(group) > 1) == [["a", "b", "c"]]


def test_one_coroutine_runner():
    """Only ``_aio`` runs a coroutine from synchronous code (``run_blocking``): no other
    module calls ``asyncio.run`` or ``run_until_complete``."""
    runners = []
    for name, path in MODULES.items():
        if name == "toolnexus._aio":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and (
                    node.func.attr == "run_until_complete"
                    or (
                        node.func.attr == "run"
                        and isinstance(node.func.value, ast.Name)
                        and node.func.value.id == "asyncio"
                    )
                )
            ):
                runners.append(f"{path.relative_to(SRC.parent)}:{node.lineno}")
    assert runners == [], f"coroutine runners besides _aio.run_blocking: {runners}"


@pytest.mark.parametrize("module", ["_toolkit", "_tools", "_host", "_call", "_chain"])
def test_below_mcp_no_module_names_an_mcp_method(module):
    text = (SRC / f"{module}.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    strings = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    docstrings = {
        ast.get_docstring(node, clean=False)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    }
    methods = ("tools/", "resources/", "prompts/", "completion/", "notifications/", "jsonrpc")
    named = [s for s in strings if s not in docstrings and s.startswith(methods)]
    assert named == []


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    groups.append(group)
    return groups
