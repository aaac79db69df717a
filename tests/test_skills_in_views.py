"""Skills in a turn, beside the tool-search views: the ``skill`` tool is the deferral
(a skill's body and files load only when the model asks), so the tool itself is never
held back; a view's ``namespaces`` admit skills as they admit tools, and its skills
prompt lists only those; a toolkit searched before its skills came keeps working."""

from __future__ import annotations

from pathlib import Path

from toolnexus import Host, Toolkit

FIXTURES = Path(__file__).resolve().parent / "skill_fixtures"


def ping(args: dict[str, object], ctx: object = None) -> str:
    """Answer with pong."""
    return "pong"


def test_the_skill_tool_is_never_deferred_in_a_deferred_toolkit() -> None:
    toolkit = Toolkit([ping], defer=True)
    toolkit.add_skills(FIXTURES / "pdf-processing")
    assert toolkit.is_deferred("ping")
    assert not toolkit.is_deferred("skill")
    view = toolkit.view()
    assert [tool.name for tool in view.loaded()] == ["skill"]
    # the prompt names the skill tool, and the model finds it without a search
    assert "skill tool" in toolkit.skills_prompt()


def test_adding_skills_after_a_search_keeps_the_index_whole() -> None:
    toolkit = Toolkit([ping])
    assert [tool.name for tool in toolkit.search("pong")] == ["ping"]
    toolkit.add_skills(FIXTURES / "pdf-processing")  # raised AttributeError before
    assert [tool.name for tool in toolkit.search("load a specialized skill")][:1] == ["skill"]


def test_a_views_namespaces_admit_skills_as_they_admit_tools() -> None:
    toolkit = Toolkit([ping])
    toolkit.namespace("docs", "Documents")
    toolkit.namespace("ops", "Operations")
    found = {}
    for name in ("pdf-processing", "release-notes"):
        probe = Toolkit()
        (skill,) = probe.add_skills(FIXTURES / name)
        found[name] = skill
    toolkit.register(found["pdf-processing"], namespace="docs")
    toolkit.register(found["release-notes"], namespace="ops")

    docs = toolkit.view(namespaces=["docs"])
    assert [skill.name for skill in docs.skills()] == ["pdf-processing"]
    assert "pdf-processing" in docs.skills_prompt()
    assert "release-notes" not in docs.skills_prompt()
    assert "skill" in [tool.name for tool in docs.tools()]
    # a view with none of the skills has no skill tool and no skills to list
    toolkit.namespace("other", "nothing in it yet")
    elsewhere = toolkit.view(namespaces=["other"])
    assert elsewhere.skills() == [] and "skill" not in elsewhere
    assert elsewhere.skills_prompt() == "No skills are currently available."
    # a view that names no namespaces offers every skill, as the toolkit's prompt does
    assert toolkit.view().skills_prompt() == toolkit.skills_prompt()
    # removing a skill forgets its namespace
    toolkit.remove(found["pdf-processing"])
    assert docs.skills() == []


def test_a_host_over_a_view_loads_and_names_that_views_skills_only() -> None:
    # The skill tool is in a view that has a skill; the toolkit's loads every skill, so a
    # host over the view could load (and list) a skill of another namespace through it.
    toolkit = Toolkit([ping])
    toolkit.namespace("docs", "Documents")
    toolkit.namespace("ops", "Operations")
    for name, home in (("pdf-processing", "docs"), ("release-notes", "ops")):
        (skill,) = Toolkit().add_skills(FIXTURES / name)
        toolkit.register(skill, namespace=home)
    with Host(toolkit.view(namespaces=["docs"])) as host:
        loaded = host.call("skill", {"name": "pdf-processing"})
        assert not loaded.is_error and "pdf-processing" in loaded.output
        refused = host.call("skill", {"name": "release-notes"})
        assert refused.is_error
        assert refused.output == 'Skill "release-notes" not found. Available skills: pdf-processing'
    with Host(toolkit) as host:  # the whole toolkit's host loads any of them
        assert not host.call("skill", {"name": "release-notes"}).is_error
