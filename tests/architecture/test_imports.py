"""The import graph of ``apps/`` flows one way.

Every ``import``/``from ... import`` in ``apps/`` (at module level or inside a function,
outside ``if TYPE_CHECKING:`` blocks too: a cycle of type hints is still a cycle of
concepts) is an edge from the importing module to the imported one. The test fails on:

- a cycle among modules (a strongly connected component of more than one module, or a
  module importing itself);
- an import of another module's private name (``from apps.x import _name``) or an
  attribute access ``module._name`` on a module imported from ``apps``;
- the same on any other module (the standard library's, a dependency's), and a private
  name read through ``getattr``/``hasattr``/``setattr`` with a literal (``getattr(block,
  "_from_testcase")``) on anything but ``self``/``cls``: product code depends on no one
  else's internals. The few deliberate uses are listed in ``ACCEPTED_PRIVATE``, each
  with its reason.

Only static imports are seen; jobs are enqueued by dotted path (a string), which is how
lower layers reach ``apps.engine.jobs`` without importing it.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "apps"

# Private names of other modules that product code uses on purpose: violation -> why.
ACCEPTED_PRIVATE = {
    # The documented way to end a process without waiting for its non-daemon threads
    # (a request thread still blocked after the server stopped); see _exit_if_held.
    "apps.core.lifecycle: os._exit": "exit without waiting for threads",
    # Twisted knows a request's path before its body only as HTTPChannel._path (the Request
    # gets it after the whole body): file content has a body limit of its own (apps/files).
}
_ATTR_FUNCTIONS = {"getattr", "hasattr", "setattr"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in APPS.rglob("*.py") if "migrations" not in p.parts}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a module of ``apps``."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _scan(modules: dict[str, Path]) -> tuple[dict[str, set[str]], list[str]]:
    """Edges ``module -> imported modules`` and the private-name violations."""
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private: list[str] = []
    for mod, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        aliases: dict[str, str] = {}  # local name -> apps module it is bound to
        outside: dict[str, str] = {}  # local name -> module from outside apps
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = _resolve(alias.name, modules)
                    if target:
                        edges[mod].add(target)
                        if alias.asname:
                            aliases[alias.asname] = target
                    elif not alias.name.startswith("apps"):
                        bound = alias.name if alias.asname else alias.name.split(".")[0]
                        outside[alias.asname or bound] = bound
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                if not base.startswith("apps"):
                    private.extend(f"{mod}: from {base} import {alias.name}" for alias in node.names
                                   if _is_private(alias.name))
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if full in modules:  # from package import submodule
                        edges[mod].add(full)
                        aliases[alias.asname or alias.name] = full
                        continue
                    target = _resolve(base, modules)
                    if target:
                        edges[mod].add(target)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append(f"{mod}: from {base} import {alias.name}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__") and aliases[node.value.id] != mod):
                private.append(f"{mod}: {aliases[node.value.id]}.{node.attr}")
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in outside and _is_private(node.attr)):
                private.append(f"{mod}: {outside[node.value.id]}.{node.attr}")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in _ATTR_FUNCTIONS and len(node.args) >= 2
                    and not (isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "cls"))
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                    and _is_private(node.args[1].value)):
                private.append(f"{mod}: {node.func.id}(..., {node.args[1].value!r})")
        edges[mod].discard(mod)
    return edges, private


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_in_apps():
    edges, _ = _scan(_modules())
    assert _cycles(edges) == []


def test_no_use_of_another_modules_private_name():
    _, private = _scan(_modules())
    assert sorted(set(private) - set(ACCEPTED_PRIVATE)) == []
    # an accepted use that is gone leaves the list, so the list stays true
    assert sorted(set(ACCEPTED_PRIVATE) - set(private)) == []


def test_scanner_sees_a_cycle_and_a_private_import(tmp_path, monkeypatch):
    """The scanner itself: a two-module cycle and a private import are reported."""
    pkg = tmp_path / "apps" / "demo"
    pkg.mkdir(parents=True)
    (tmp_path / "apps" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from apps.demo import b\n")
    (pkg / "b.py").write_text("def f():\n    from apps.demo.a import _hidden\n")
    (pkg / "c.py").write_text("import os\nfrom django.db import connection, _x\n\n"
                              "def f(block):\n    os._exit(0)\n    return getattr(block, '_from_testcase', False)\n\n"
                              "class C:\n    def g(self):\n        return getattr(self, '_own', None)\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path, raising=False)
    global ROOT, APPS
    saved = ROOT, APPS
    ROOT, APPS = tmp_path, tmp_path / "apps"
    try:
        edges, private = _scan(_modules())
    finally:
        ROOT, APPS = saved
    assert _cycles(edges) == [["apps.demo.a", "apps.demo.b"]]
    assert sorted(private) == ["apps.demo.b: from apps.demo.a import _hidden",
                               "apps.demo.c: from django.db import _x",
                               "apps.demo.c: getattr(..., '_from_testcase')",
                               "apps.demo.c: os._exit"]


def _diagram_layers() -> dict[str, int]:
    """``{"store.py": 2, "task_types/": 0, ...}`` from the rows ``│ L<n> a.py b.py ...`` (and
    their continuation rows) of the layer diagram in docs/architecture.md."""
    section = (ROOT / "docs" / "architecture.md").read_text()
    layers: dict[str, int] = {}
    current = None
    for line in section.splitlines():
        row = line.strip()
        match = re.match(r"│ L(\d) ", row)
        if match:
            current = int(match.group(1))
        elif not row.startswith("│"):
            current = None
        if current is not None:
            for name in re.findall(r"\b([a-z_]+\.py|task_types/)", row):
                layers[name] = current
    return layers


def _diagram_name(module: str) -> str | None:
    """The name an engine module has in the diagram (None outside ``apps.engine``'s layers)."""
    parts = module.split(".")
    if parts[:2] != ["apps", "engine"] or len(parts) < 3 or parts[2] == "management":
        return None
    return "task_types/" if parts[2] == "task_types" else f"{parts[2]}.py"


def test_the_engine_imports_flow_down_the_architecture_layer_diagram():
    """Every engine module has a layer in the diagram of docs/architecture.md, and none imports (at module
    level or inside a function) a module of a higher layer."""
    layers = _diagram_layers()
    modules = _modules()
    names = {n for n in (_diagram_name(m) for m in modules) if n}
    assert sorted(names - set(layers)) == []
    assert sorted(set(layers) - names) == []
    edges, _ = _scan(modules)
    upward = []
    for mod, targets in edges.items():
        here = _diagram_name(mod)
        for target in targets:
            there = _diagram_name(target)
            if here and there and here != there and layers[here] < layers[there]:
                upward.append(f"{mod} (L{layers[here]}) imports {target} (L{layers[there]})")
    assert sorted(upward) == []
