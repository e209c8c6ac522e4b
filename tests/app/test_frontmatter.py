"""``wiremcp.frontmatter``: a SKILL.md's frontmatter as the JSON object a skills listing carries (YAML 1.2's
core schema, JSON values only), and the Agent Skills rules it is checked against."""

from __future__ import annotations

import pytest

from wiremcp.frontmatter import FrontmatterError, read

SEP = "seps/2640-skills-extension"


def skill_md(body: str) -> str:
    return f"---\n{body}\n---\n\n# Instructions\n"


@pytest.mark.spec(f"{SEP}#frontmatter")
def test_every_field_the_author_wrote_is_kept_as_json() -> None:
    assert read(skill_md("name: pdf-processing\ndescription: Work with PDFs\nlicense: Apache-2.0\n"
                         "metadata:\n  version: '2.1.0'\n  tags: [pdf, forms]\n  stable: true\n  rank: 3")) == {
        "name": "pdf-processing", "description": "Work with PDFs", "license": "Apache-2.0",
        "metadata": {"version": "2.1.0", "tags": ["pdf", "forms"], "stable": True, "rank": 3}}


@pytest.mark.parametrize(("yaml_value", "json_value"), [
    ("yes", "yes"), ("on", "on"), ("No", "No"), ("true", True), ("FALSE", False),  # YAML 1.1 booleans stay strings
    ("2024-01-01", "2024-01-01"), ("12:30", "12:30"),  # no timestamps, no base 60
    ("012", 12), ("0o17", 15), ("0x1F", 31), ("-7", -7), ("1_000", "1_000"),
    ("1.5", 1.5), ("1e3", 1000.0), ("~", None), ("null", None), ("", None)])
def test_values_are_read_with_the_yaml_1_2_core_schema(yaml_value: str, json_value: object) -> None:
    assert read(skill_md(f"name: a\ndescription: b\nvalue: {yaml_value}"))["value"] == json_value


def test_a_byte_order_mark_and_crlf_line_ends_are_accepted() -> None:
    assert read("\ufeff---\r\nname: a\r\ndescription: b\r\n---\r\nbody")["name"] == "a"


def test_a_frontmatter_block_at_the_very_end_is_read() -> None:
    assert read("---\nname: a\ndescription: b\n---")["description"] == "b"


@pytest.mark.spec(f"{SEP}#skill-format")
@pytest.mark.parametrize(("markdown", "says"), [
    ("# no frontmatter\n", "must begin with YAML frontmatter"),
    ("text\n---\nname: a\ndescription: b\n---\n", "must begin with YAML frontmatter"),
    (skill_md("- a\n- b"), "must be a mapping"),
    (skill_md("name: a\ndescription: [unclosed"), "not valid YAML: "),
    (skill_md("description: b"), "name None"),
    (skill_md("name: PDF\ndescription: b"), "name 'PDF'"),
    (skill_md("name: -pdf\ndescription: b"), "name '-pdf'"),
    (skill_md("name: pdf--tools\ndescription: b"), "name 'pdf--tools'"),
    (skill_md("name: " + "a" * 65 + "\ndescription: b"), "1-64"),
    (skill_md("name: a"), "description must be a non-empty string"),
    (skill_md("name: a\ndescription: '  '"), "description must be a non-empty string"),
    (skill_md("name: a\ndescription: " + "d" * 1025), "at most 1024"),
    (skill_md("name: a\ndescription: b\nratio: .nan"), "frontmatter.ratio is nan"),
    (skill_md("name: a\ndescription: b\nblob: !!binary aGk="), "frontmatter.blob is a bytes"),
    (skill_md("name: a\ndescription: b\n1: one"), "key that is not a string"),
    (skill_md("name: a\ndescription: b\n? [1, 2]\n: pair"), "found unhashable key (line 4 of SKILL.md)"),
    (skill_md("name: a\ndescription: b\nmetadata:\n  io.modelcontextprotocol/x: 1"), "reserved for MCP extensions"),
])
def test_what_the_agent_skills_spec_refuses_is_one_clear_error(markdown: str, says: str) -> None:
    with pytest.raises(FrontmatterError) as raised:
        read(markdown)
    assert says in str(raised.value)
    assert "\n" not in str(raised.value)


def test_python_objects_cannot_be_made_from_frontmatter() -> None:
    with pytest.raises(FrontmatterError):
        read(skill_md("name: a\ndescription: b\nx: !!python/object/apply:os.system ['true']"))
