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


def _documented_variables(readme: str) -> set[str]:
    """Every variable the README's tables name: full names (`CONDUCTOR_EVENT_MESSAGE_LEASE_MS`)
    and, in the same row, shorthands after one (`..._MAX_ATTEMPTS`), expanded with each
    ``_``-prefix of the full name before them."""
    names: set[str] = set()
    for row in readme.splitlines():
        if not row.startswith("|"):
            continue
        full = None
        for token in re.findall(r"`((?:\.\.\.)?_?[A-Z][A-Z0-9_]*)`", row):
            if token.startswith("..."):
                if full:
                    parts = full.split("_")
                    names.update("_".join(parts[:i]) + token[3:] for i in range(1, len(parts)))
            else:
                full = token
                names.add(token)
    return names


def test_every_conductor_setting_read_from_the_environment_is_in_the_configuration_table():
    """``settings.CONDUCTOR`` holds every engine tunable, read from ``CONDUCTOR_*``
    variables; each of them is in README's configuration table."""
    variables = set(re.findall(r"\"(CONDUCTOR_[A-Z0-9_]*[A-Z0-9])\"", (ROOT / "conductor_web" / "settings.py").read_text()))
    assert len(variables) > 40
    assert sorted(variables - _documented_variables((ROOT / "README.md").read_text())) == []


def test_no_module_level_tunable_outside_the_settings():
    """Leases, intervals and batch sizes of the engine, the listeners and the API are in
    ``settings.CONDUCTOR`` (their unit in their name), not module constants."""
    tunable = re.compile(r"^(?=[A-Z])[A-Z0-9_]*(LEASE|RENEW|STANDBY|REDISPATCH|REPAIR|POSTPONE|SETTLE|CACHE|RECHECK|"
                         r"RESOLUTION|BUDGET|PAUSE|STALE|LOOKBACK|JOB_SECONDS)[A-Z0-9_]*\s*=\s*[\d(]", re.M)
    found = [f"{path.relative_to(ROOT)}: {m.group(0)}"
             for top in ("engine", "listeners", "api") for path in (ROOT / "apps" / top).rglob("*.py")
             if "migrations" not in path.parts for m in tunable.finditer(path.read_text())]
    assert found == []


def test_the_readme_java_example_is_the_file_the_java_suite_runs():
    """README.md shows tests/java's ``OrderFulfillment.java`` verbatim; the Java suite's
    ``ReadmeExampleTest`` runs it (tests/e2e/test_java_sdk.py)."""
    java = ROOT / "tests" / "java" / "src"
    example = java / "main" / "java" / "com" / "example" / "orders" / "OrderFulfillment.java"
    assert example.read_text().strip() in (ROOT / "README.md").read_text()
    assert "OrderFulfillment.main" in (java / "test" / "java" / "com" / "example" / "conductor"
                                       / "ReadmeExampleTest.java").read_text()
