"""The docs match the tree: docs/architecture.md names every engine module and only
modules that exist; every section of ``docs/conductor-notes.md`` the code cites exists;
every code block of README.md and docs/*.md marked ``<!-- file: PATH -->`` is exactly the
file it shows; every relative link resolves to a file and, after ``#``, a heading in it."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "apps" / "engine"
NOT_ARCHITECTURE = {"__init__.py", "admin.py", "apps.py"}


DOCS = ROOT / "docs"


def architecture_section() -> str:
    """The Architecture page (docs/architecture.md), README's former section."""
    return (DOCS / "architecture.md").read_text()


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
    assert sorted(variables - _documented_variables((DOCS / "configuration.md").read_text())) == []


def test_no_module_level_tunable_outside_the_settings():
    """Leases, intervals and batch sizes of the engine, the listeners and the API are in
    ``settings.CONDUCTOR`` (their unit in their name), not module constants."""
    tunable = re.compile(r"^(?=[A-Z])[A-Z0-9_]*(LEASE|RENEW|STANDBY|REDISPATCH|REPAIR|POSTPONE|SETTLE|CACHE|RECHECK|"
                         r"RESOLUTION|BUDGET|PAUSE|STALE|LOOKBACK|JOB_SECONDS)[A-Z0-9_]*\s*=\s*[\d(]", re.M)
    found = [f"{path.relative_to(ROOT)}: {m.group(0)}"
             for top in ("engine", "listeners", "api") for path in (ROOT / "apps" / top).rglob("*.py")
             if "migrations" not in path.parts for m in tunable.finditer(path.read_text())]
    assert found == []


# --- README.md and docs/*.md: code blocks that show a file, links -------------------------

FILE_MARKER = re.compile(r"^<!-- file: (\S+) -->\n```[\w+-]*\n(.*?)^```$", re.M | re.S)
FENCE = re.compile(r"^```.*?^```$", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def doc_pages() -> list[Path]:
    """README.md and every Markdown page of docs/ (sorted, README first)."""
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def file_blocks(text: str) -> list[tuple[str, str]]:
    """``[(path, block text), ...]`` for each ``<!-- file: PATH -->`` line that opens a
    fenced code block on the next line; raises AssertionError for a marker with no block
    right after it."""
    blocks = [(m.group(1), m.group(2)) for m in FILE_MARKER.finditer(text)]
    assert len(blocks) == len(re.findall(r"^<!-- file: ", text, re.M)), "a `<!-- file: PATH -->` line must be followed by a code block"
    return blocks


def test_file_blocks_find_each_marked_block_and_refuse_a_dangling_marker():
    text = "a\n<!-- file: x.py -->\n```python\nprint(1)\n```\nb\n```sh\nls\n```\n"
    assert file_blocks(text) == [("x.py", "print(1)\n")]
    try:
        file_blocks("<!-- file: x.py -->\n\n```python\nprint(1)\n```\n")
    except AssertionError:
        pass
    else:
        raise AssertionError("a marker separated from its block was accepted")


def test_every_block_marked_with_a_file_is_that_file_verbatim():
    """What a page shows as a file is the file the tests run (README's SDK examples,
    and any page's), character for character."""
    mismatched, seen = [], 0
    for page in doc_pages():
        for path, block in file_blocks(page.read_text()):
            seen += 1
            target = ROOT / path
            if not target.is_file() or target.read_text().strip() != block.strip():
                mismatched.append(f"{page.relative_to(ROOT)}: {path}")
    assert seen >= 2 and mismatched == []


def test_the_readme_shows_every_sdk_example_it_connects():
    """Each subsection of "Connecting workers" that shows an SDK's example shows it from a
    file (so the e2e suites run exactly what the README shows)."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Connecting workers\n"):]
    section = section[:section.index("\n## ", 1)]
    shown = {path for path, _ in file_blocks(section)}
    assert {"examples/order_fulfillment.py", "tests/ts/order_fulfillment.ts"} <= shown
    unmarked = [b[:60] for b in FENCE.findall(FILE_MARKER.sub("", section))
                if b.startswith(("```python", "```typescript", "```java", "```go"))]
    assert unmarked == []


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped
    (``-`` and ``_`` kept), spaces to ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Anchors of the headings of a Markdown text (headings inside code blocks ignored)."""
    return {github_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", text), re.M)}


def test_github_anchor_matches_githubs_rule():
    assert github_anchor("Scaling out (production)") == "scaling-out-production"
    assert github_anchor('The "dynamic workflows in Python" examples') == "the-dynamic-workflows-in-python-examples"
    assert github_anchor("A local database, step by step") == "a-local-database-step-by-step"


def test_every_relative_link_of_the_readme_and_docs_resolves():
    """``[text](path)`` and ``[text](path#heading)`` on README.md and docs/*.md name a file
    that exists and a heading of it (``#heading`` alone: of the same page)."""
    broken = []
    for page in doc_pages():
        text = page.read_text()
        for target in LINK.findall(FENCE.sub("", text)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and (file.suffix != ".md" or anchor not in anchors(file.read_text())):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_the_readme_is_short_and_links_every_docs_page():
    """README.md holds what a newcomer needs (a few hundred lines: room for a Java and a Go
    subsection beside the Python and TypeScript ones); every page of docs/ is linked from it."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 700  # four SDK examples shown whole, as their suites run them
    linked = {t.partition("#")[0] for t in LINK.findall(readme)}
    assert sorted(p.name for p in DOCS.glob("*.md") if f"docs/{p.name}" not in linked) == []


def test_the_readme_java_example_is_the_file_the_java_suite_runs():
    """README.md shows tests/java's ``OrderFulfillment.java`` verbatim; the Java suite's
    ``ReadmeExampleTest`` runs it (tests/e2e/test_java_sdk.py)."""
    java = ROOT / "tests" / "java" / "src"
    example = java / "main" / "java" / "com" / "example" / "orders" / "OrderFulfillment.java"
    assert example.read_text().strip() in (ROOT / "README.md").read_text()
    assert "OrderFulfillment.main" in (java / "test" / "java" / "com" / "example" / "conductor"
                                       / "ReadmeExampleTest.java").read_text()
