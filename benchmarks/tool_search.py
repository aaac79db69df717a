"""Tool search on a real catalog: the GitHub REST API's operations and the tools of real
MCP servers, as tools.

Run it from a checkout, with the ``@octokit/openapi`` npm package installed somewhere
(the official OpenAPI description of the GitHub REST API, which nobody here wrote):

    npm install --prefix /work/tools/octokit @octokit/openapi
    python benchmarks/tool_search.py [--spec DIR] [--repeats 200]

``--spec`` is the package's ``generated`` folder (default: under /work/tools/octokit, or
$TOOLNEXUS_OCTOKIT). Each operation becomes one tool: its ``operationId`` as the name
(``repos/get-content`` -> ``repos_get-content``), its summary and the first paragraph of its
description as the description, its path and query parameters and its JSON body's
top-level properties (each with its description) as the parameters.

It prints:

1. Quality on ``benchmarks/tool_search_queries.json`` (queries written as a user would ask,
   each with the operations that answer it, tagged ``near`` — in the summary's own words —
   or ``far`` — in other words): Recall@1/@5/@10 and MRR (first relevant result within
   the top 10), for plain BM25 (``\\w+`` words, no field weights, no stemming, no synonyms)
   and the default ranker of ``Toolkit.search``, for all queries, near and far. Each
   figure is *judged* (a query is answered by any tool its ``expected`` lists) or
   *strict* (by the first only, the tool it was written for); the file's ``judging``
   says when a second tool is listed (benchmarks/README.md lists those added in review).
   Targets (issue 39): Recall@5 >= 0.90 on all queries with the default ranker, and on the
   far queries at least 1.5x what plain BM25 reads.
2. Latency: the median (p50) and p90 of one ``Toolkit.search`` over the query set, at 1,000
   tools (api.github.com's first 1,000 operations) and at 5,000 (api.github.com, GHEC and
   three GitHub Enterprise Server releases, one namespace each, as a gateway would federate
   them), the index built beforehand (once, as a toolkit keeps it: each term's postings
   with their BM25F weights, pruned to the best 500, and what each word of the synonym
   table finds, are worked out on the first search after a change, so a search only adds
   up precomputed postings — a word never searched before costs what any other does).
   Apart, the time of the first search after a change (the weighing). Target: p50 <= 1 ms
   at 5,000 tools.
3. Definition bytes: the JSON of ``to_openai()`` (Chat Completions) and ``to_anthropic()``
   for a 200-tool toolkit, without deferral and with every tool deferred but a core of
   five (the local fallback: the core plus ``search_tools`` and ``call_tool``); and
   Anthropic's native form, which still sends every definition (``defer_loading`` keeps
   them out of the model's context, not off the wire). Target: >= 85% fewer bytes.

The quality catalog adds to GitHub's operations the tools of four MCP servers from npm
(filesystem, memory, sequential-thinking, everything), kept in
``benchmarks/tool_search_mcp_servers.json`` with each package's name and version
(``benchmarks/mcp_server_tools.py`` lists them through ``McpClient``).

The query set was written for this benchmark. Each query carries a fixed ``split``
(sha256 of its text: even ``tune``, odd ``held-out``); changes to the ranker (the synonym
table, weights, stemming) are judged on the ``tune`` half only, and the ``held-out`` row
is the honest figure. The synonym table written before the split saw every query: the
held-out row is an upper bound for that part. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from toolnexus import Tool, Toolkit, ToolResult  # noqa: E402
from toolnexus._search import SearchIndex  # noqa: E402

QUERIES = HERE / "tool_search_queries.json"
MCP_SERVERS = HERE / "tool_search_mcp_servers.json"
DEFAULT_SPEC = Path(
    os.environ.get(
        "TOOLNEXUS_OCTOKIT", "/work/tools/octokit/node_modules/@octokit/openapi/generated"
    )
)
_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def _property(schema: Any, description: str) -> dict[str, Any]:
    """A parameter's schema as a tool made from it would carry: its type, description and
    enum (nested detail left out: the benchmark measures search, not validation)."""
    out: dict[str, Any] = {}
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind in _TYPES:
        out["type"] = kind
    if description:
        out["description"] = description
    enum = schema.get("enum") if isinstance(schema, dict) else None
    if isinstance(enum, list) and all(isinstance(v, (str, int)) for v in enum):
        out["enum"] = enum
    return out


def _first_paragraph(text: str, limit: int = 300) -> str:
    paragraph = text.strip().split("\n\n")[0].replace("\n", " ")
    return paragraph[:limit]


def operations(spec_file: Path) -> list[dict[str, Any]]:
    """Each operation of an OpenAPI description: id, summary, description, parameters."""
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    found = []
    for item in spec["paths"].values():
        for method, op in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            params: dict[str, dict[str, Any]] = {}
            for param in op.get("parameters", []):
                if param.get("in") in ("path", "query"):
                    params[param["name"]] = _property(
                        param.get("schema", {}), _first_paragraph(param.get("description", ""))
                    )
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            props = body.get("schema", {}).get("properties", {})
            for name, schema in props.items() if isinstance(props, dict) else ():
                params.setdefault(
                    name, _property(schema, _first_paragraph(schema.get("description", "")))
                )
            found.append(
                {
                    "id": op["operationId"],
                    "summary": op.get("summary", ""),
                    "description": _first_paragraph(op.get("description", "")),
                    "parameters": params,
                }
            )
    return found


def as_tool(op: dict[str, Any], prefix: str = "") -> Tool:
    description = op["summary"]
    if op.get("description"):
        description += ". " + op["description"]
    schema = {"type": "object", "properties": op["parameters"]}
    return Tool(
        prefix + op["id"],
        description,
        schema,
        lambda args, ctx=None: ToolResult.ok("ok"),
        title=op["summary"] or None,
    )


def mcp_server_tools() -> list[Tool]:
    """The tools of the real MCP servers in ``tool_search_mcp_servers.json`` (listed through
    ``McpClient`` by ``mcp_server_tools.py``), named ``<namespace>_<tool>`` as a gateway
    prefixes them."""
    data = json.loads(MCP_SERVERS.read_text(encoding="utf-8"))
    return [
        Tool(
            f"{server['namespace']}_{tool['name']}",
            tool.get("description", ""),
            tool["inputSchema"],
            lambda args, ctx=None: ToolResult.ok("ok"),
            title=tool.get("title"),
        )
        for server in data["servers"]
        for tool in server["tools"]
    ]


def tool_name(operation_id: str) -> str:
    return operation_id.replace("/", "_")


def load_queries() -> list[dict[str, Any]]:
    return json.loads(QUERIES.read_text(encoding="utf-8"))["queries"]


GROUPS = ("all", "near", "far", "tune", "held-out", "mcp")


def evaluate(
    rank: Any, queries: list[dict[str, Any]], *, judged: bool = True
) -> dict[str, dict[str, float]]:
    """Recall@1/5/10 and MRR@10 for ``rank(query) -> names``: all queries, near and far,
    the tuning half and the held-out half (the fixed ``split``), and those over the MCP
    servers' tools. ``judged``: a query is answered by any tool its ``expected`` lists;
    otherwise (strict) by the first only, the one it was written for."""
    rows: dict[str, list[int | None]] = {group: [] for group in GROUPS}
    for query in queries:
        names = rank(query["query"])
        listed = query["expected"] if judged else query["expected"][:1]
        wanted = {tool_name(each) for each in listed}
        position = next((i for i, name in enumerate(names[:10]) if name in wanted), None)
        for group in ("all", query["kind"], query["split"], query.get("catalog")):
            if group in rows:
                rows[group].append(position)
    out = {}
    for group, found in rows.items():
        count = len(found) or 1
        out[group] = {
            "n": len(found),
            "R@1": sum(1 for p in found if p is not None and p < 1) / count,
            "R@5": sum(1 for p in found if p is not None and p < 5) / count,
            "R@10": sum(1 for p in found if p is not None) / count,
            "MRR": sum(1 / (p + 1) for p in found if p is not None) / count,
        }
    return out


def quality(ops: list[dict[str, Any]], queries: list[dict[str, Any]]) -> None:
    tools = [as_tool(op) for op in ops] + mcp_server_tools()
    toolkit = Toolkit(tools)
    plain = SearchIndex(plain=True)
    for each in tools:
        plain.add(each)
    plain_rank = lambda q: plain.rank(q, 10)  # noqa: E731
    default_rank = lambda q: [t.name for t in toolkit.search(q, 10)]  # noqa: E731
    results = {
        ("plain BM25", "judged"): evaluate(plain_rank, queries),
        ("default", "judged"): evaluate(default_rank, queries),
        ("default", "strict"): evaluate(default_rank, queries, judged=False),
    }
    print(f"1. quality: {len(tools)} tools, {len(queries)} queries")
    print(
        '   judged: any tool a query\'s "expected" lists answers it; strict: only the first'
        " (the one it was written for)"
    )
    print(
        f"   {'ranker':<12} {'judging':<8} {'queries':<8} {'n':>4} {'R@1':>6} {'R@5':>6}"
        f" {'R@10':>6} {'MRR':>6}"
    )
    for (ranker, judging), table in results.items():
        for kind, row in table.items():
            print(
                f"   {ranker:<12} {judging:<8} {kind:<8} {row['n']:>4} {row['R@1']:>6.3f}"
                f" {row['R@5']:>6.3f} {row['R@10']:>6.3f} {row['MRR']:>6.3f}"
            )
    judged, strict = results["default", "judged"], results["default", "strict"]
    far_plain = results["plain BM25", "judged"]["far"]["R@5"]
    far_default = judged["far"]["R@5"]
    ratio = far_default / far_plain if far_plain else float("inf")
    print(
        f"   held-out half (never tuned on): R@5 judged {judged['held-out']['R@5']:.3f}, "
        f"strict {strict['held-out']['R@5']:.3f}; tuning half judged "
        f"{judged['tune']['R@5']:.3f}, strict {strict['tune']['R@5']:.3f}"
    )
    print(
        f"   targets: R@5 (all, default) judged {judged['all']['R@5']:.3f}, strict "
        f"{strict['all']['R@5']:.3f} >= 0.90; far R@5 (judged) {far_default:.3f} vs plain "
        f"{far_plain:.3f}: {ratio:.2f}x >= 1.5x"
    )


def latency(spec_dir: Path, queries: list[dict[str, Any]], repeats: int) -> None:
    print("2. latency of one Toolkit.search(query, 5), index built beforehand")
    big = Toolkit()
    for server in ("api.github.com", "ghec", "ghes-3.17", "ghes-3.18", "ghes-3.19"):
        path = spec_dir / f"{server}.deref.json"
        if not path.exists():
            continue
        space = big.namespace(server.replace(".", "-"), f"GitHub REST API ({server})")
        space.register(
            *(as_tool(op, prefix=server.replace(".", "-") + "__") for op in operations(path))
        )
    for size in (1_000, 5_000):
        toolkit = Toolkit(big.tools()[:size])
        if len(toolkit) < size:
            print(f"   {size} tools: only {len(toolkit)} in the specs found; skipped")
            continue
        toolkit.search("warm up the index")
        samples = []
        texts = [q["query"] for q in queries]
        for _ in range(max(1, repeats // len(texts) + 1)):
            for text in texts:
                start = time.perf_counter()
                toolkit.search(text, 5)
                samples.append((time.perf_counter() - start) * 1000)
        samples.sort()
        p50 = statistics.median(samples)
        p90 = samples[int(len(samples) * 0.9)]
        # A change (here: one tool removed and put back) has the next search weigh the
        # collection again: every term's postings and each synonym word's finds.
        first = []
        for _ in range(3):
            spare = toolkit.tools()[-1]
            toolkit.remove(spare.name)
            toolkit.register(spare)
            start = time.perf_counter()
            toolkit.search(texts[0], 5)
            first.append((time.perf_counter() - start) * 1000)
        print(
            f"   {size:>5} tools: p50 {p50:.3f} ms, p90 {p90:.3f} ms ({len(samples)} searches, "
            f"the query set over and over, no cache: every word's postings are precomputed); "
            f"the first search after a change (weighs the collection): "
            f"{statistics.median(first):.0f} ms"
        )
    print("   target: p50 <= 1 ms at 5,000 tools")


def definition_bytes(ops: list[dict[str, Any]]) -> None:
    print("3. definition bytes, 200 tools")
    tools = [as_tool(op) for op in ops[:200]]

    def size(value: Any) -> int:
        return len(json.dumps(value, separators=(",", ":")).encode())

    everything = Toolkit(tools)
    deferred = Toolkit(defer=True)
    for index, each in enumerate(tools):
        if index < 5:  # the always-loaded core
            each = Tool(each.name, each.description, each.input_schema, each.fn, defer=False)
        deferred.register(each)
    rows = [
        ("OpenAI chat", size(everything.to_openai()), size(deferred.to_openai())),
        ("Anthropic", size(everything.to_anthropic()), size(deferred.to_anthropic())),
        (
            "Anthropic bm25 (native)",
            size(everything.to_anthropic()),
            size(deferred.to_anthropic(search="bm25")),
        ),
    ]
    for label, full, held in rows:
        print(f"   {label:<24} all {full:>8} B, deferred {held:>8} B: {1 - held / full:6.1%} fewer")
    print("   target: >= 85% fewer (the local form; the native form sends every definition)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC)
    parser.add_argument("--repeats", type=int, default=2_000)
    options = parser.parse_args()
    main_spec = options.spec / "api.github.com.deref.json"
    if not main_spec.exists():
        sys.exit(f"no {main_spec}: npm install --prefix DIR @octokit/openapi, then --spec")
    try:
        load = os.getloadavg()[0]
        print(f"load average: {load:.2f}")
    except OSError:
        pass
    ops = operations(main_spec)
    queries = load_queries()
    quality(ops, queries)
    latency(options.spec, queries, options.repeats)
    definition_bytes(ops)


if __name__ == "__main__":
    main()
