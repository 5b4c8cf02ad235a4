"""The docs match the tree: README's Architecture section names every engine module and
only modules that exist; every section of ``docs/conductor-notes.md`` the code cites
exists."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "apps" / "engine"
NOT_ARCHITECTURE = {"__init__.py", "admin.py", "apps.py"}


def architecture_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Architecture\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_every_engine_module_is_in_the_architecture_section():
    section = architecture_section()
    modules = sorted(p.name for p in ENGINE.glob("*.py") if p.name not in NOT_ARCHITECTURE)
    assert [m for m in modules if m not in section] == []
    assert "task_types/" in section


def test_every_engine_module_the_section_names_exists():
    named = set(re.findall(r"\b([a-z_]+\.py)\b", architecture_section()))
    elsewhere = {p.name for top in ("apps", "bench", "tests") for p in (ROOT / top).rglob("*.py")}
    assert sorted(n for n in named if not (ENGINE / n).exists() and n not in elsewhere) == []


def test_every_cited_section_of_the_conductor_notes_exists():
    """Code and tests cite ``docs/conductor-notes.md §N`` (also ``§4.2-4.3``): each N is a
    heading there."""
    headings = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", (ROOT / "docs" / "conductor-notes.md").read_text(),
                              re.M))
    cited = set()
    for top in ("apps", "tests"):
        for path in (ROOT / top).rglob("*.py"):
            for refs in re.findall(r"conductor-notes\.md\s+((?:§[\d.\-]+(?:,|\s+and)?\s*)+)", path.read_text()):
                for ref in re.findall(r"§([\d.\-]+)", refs):
                    cited.update(part.rstrip(".") for part in ref.split("-") if part.rstrip("."))
    assert cited and sorted(cited - headings) == []
