"""Bridges from a toolkit to the agent frameworks users build on.

One call turns a :class:`~toolnexus.Toolkit` into a framework's own tools, each run through a
:class:`~toolnexus.Host` (so deadlines and cancellation hold, also for a tool that ignores its
token), with the schemas the provider adapters emit. A tool's question to a human surfaces
through the framework's own human-in-the-loop mechanism, and its answer resumes the call that
asked:

- :func:`toolnexus.bridges.langchain.to_langchain` — LangChain tools; a question is a
  LangGraph ``interrupt``, answered with ``Command(resume=...)``;
- :func:`toolnexus.bridges.openai_agents.to_openai_agents` — openai-agents ``FunctionTool`` s;
  a question is a ``needs_approval`` interruption, answered with ``RunState.approve/reject``;
- :func:`toolnexus.bridges.pydantic_ai.to_pydantic_ai` — pydantic-ai tools; a question is an
  ``ApprovalRequired`` deferred request, answered with ``DeferredToolResults``.

No framework is a dependency: each module imports its framework when called, and says which
extra to install when it is missing. Example::

    from toolnexus.bridges.langchain import to_langchain

    tools = to_langchain(toolkit, timeout_ms=5_000)
"""

__all__: list[str] = []  # the bridges live in the modules named above
