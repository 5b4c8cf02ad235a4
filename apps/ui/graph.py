"""Graph of a workflow for the browser: cytoscape elements built from a definition
snapshot and (optionally) the execution's tasks. Plain Python: no ORM, no HTTP.

Shapes follow Conductor's UI: fork and join bars, SWITCH/DECISION diamonds whose outgoing
edges carry the case name (``default`` for the default case, drawn even when the
definition has none, since the workflow then continues after the SWITCH), DO_WHILE as a
compound group holding the loop node, its body and a loop-end bar, SUB_WORKFLOW nodes that
know their child's id, TERMINATE as a circle, start and end circles.

Runtime state is attached per node as ``iters``: ``{scope: [attempt, ...]}`` where the
scope is the loop suffix of the runtime reference (``""`` outside loops, ``"__3"`` for the
third iteration, ``"__2__1"`` in nested loops) and attempts are ordered by ``seq``. Each
DO_WHILE node lists the scopes of its body in ``scopes``, so the browser can switch the
iteration shown without asking the server. ``status``/``attempts``/``executed`` are filled
for the default view (the latest iteration of every loop), and edges carry ``executed`` for
that view too; the browser recomputes both when the operator picks another iteration.

A dynamic fork shows one node per spawned task up to ``dynamic_limit`` branches, and one
summary node (``kind: "dynamic"``, counts per status, members) beyond that, so a fork of
hundreds stays readable and fast to lay out. Loop iterations are never drawn side by side,
which keeps an execution of thousands of tasks at the size of its definition.
"""
from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable

from apps.engine.params import ref_suffix, strip_iteration
from apps.engine.state import TaskState
from apps.engine.status import FAILED_TASK, TERMINAL_TASK, TERMINAL_WORKFLOW

START_ID = "__start"
END_ID = "__end"

_KIND_BY_TYPE = {
    "FORK_JOIN": "fork", "FORK_JOIN_DYNAMIC": "fork", "FORK": "fork",
    "JOIN": "join", "EXCLUSIVE_JOIN": "join",
    "SWITCH": "switch", "DECISION": "switch",
    "DO_WHILE": "loop",
    "SUB_WORKFLOW": "sub", "START_WORKFLOW": "task",
    "TERMINATE": "terminate",
}


def scope_key(scope: str) -> tuple[int, ...]:
    """Sort key of a loop scope: ``"__2__10"`` -> ``(2, 10)``; ``""`` -> ``()``."""
    parts = [p for p in scope.split("__") if p]
    out = []
    for p in parts:
        try:
            out.append(int(p))
        except ValueError:
            out.append(0)
    return tuple(out)


def _attempt(task: TaskState) -> dict:
    out = {"taskId": task.task_id, "status": task.status, "retryCount": task.retry_count, "seq": task.seq}
    if task.task_type in ("SWITCH", "DECISION"):
        out["case"] = (task.input_data or {}).get("case")
    sub_id = task.sub_workflow_id or (task.output_data or {}).get("subWorkflowId")
    if sub_id:
        out["subWorkflowId"] = sub_id
    return out


def aggregate_status(statuses: Iterable[str]) -> str | None:
    """One status for a group of tasks: failed if any failed, running if any is not
    terminal, completed (with errors if any was) otherwise; None for no tasks."""
    statuses = list(statuses)
    if not statuses:
        return None
    if any(s in FAILED_TASK for s in statuses):
        return "FAILED"
    if any(s not in TERMINAL_TASK for s in statuses):
        return "IN_PROGRESS" if any(s == "IN_PROGRESS" for s in statuses) else "SCHEDULED"
    if any(s in ("COMPLETED_WITH_ERRORS", "CANCELED") for s in statuses):
        return "COMPLETED_WITH_ERRORS"
    if all(s == "SKIPPED" for s in statuses):
        return "SKIPPED"
    return "COMPLETED"


class _Builder:
    def __init__(self, definition: dict, tasks: list[TaskState] | None, workflow_status: str | None,
                 dynamic_limit: int):
        self.definition = definition or {}
        self.preview = tasks is None
        self.tasks = tasks or []
        self.workflow_status = workflow_status
        self.dynamic_limit = dynamic_limit
        self.nodes: dict[str, dict] = {}
        self.edges: dict[str, dict] = {}
        self.by_base: dict[str, list[TaskState]] = defaultdict(list)
        for t in sorted(self.tasks, key=lambda t: t.seq):
            self.by_base[strip_iteration(t.reference_task_name)].append(t)
        self.loop_depth: dict[str, int] = {}

    # --- elements ----------------------------------------------------------------------

    def iters_of(self, base_ref: str) -> dict[str, list[dict]]:
        """Runs of a definition reference grouped by loop scope, oldest attempt first."""
        out: dict[str, list[dict]] = defaultdict(list)
        for t in self.by_base.get(base_ref, ()):
            out[ref_suffix(t.reference_task_name)].append(_attempt(t))
        return dict(out)

    def node(self, node_id: str, kind: str, title: str, *, parent: str | None, loop: str | None,
             ref: str | None = None, task_type: str | None = None, iters: dict | None = None,
             **extra) -> dict:
        """Add (or replace) a node and return its data."""
        data = {"id": node_id, "kind": kind, "title": title, "ref": ref, "type": task_type, "loop": loop,
                "iters": iters if iters is not None else {}}
        if parent:
            data["parent"] = parent
        data.update(extra)
        self.nodes[node_id] = data
        return data

    def edge(self, source: str, target: str, label: str | None = None) -> None:
        """Add an edge once (same source, target and label)."""
        edge_id = f"{source}->{target}" + (f"[{label}]" if label else "")
        if edge_id not in self.edges:
            data = {"id": edge_id, "source": source, "target": target}
            if label:
                data["label"] = label
            self.edges[edge_id] = data

    def connect(self, exits: list[tuple[str, str | None]], entries: list[str]) -> None:
        """Edges from every (exit, label) to every entry."""
        for source, label in exits:
            for target in entries:
                self.edge(source, target, label)

    # --- the definition tree -------------------------------------------------------------

    def build_list(self, tasks: list, parent: str | None, loop: str | None
                   ) -> tuple[list[str], list[tuple[str, str | None]], bool]:
        """Chain a task list; returns (entries, exits, empty)."""
        entries: list[str] = []
        exits: list[tuple[str, str | None]] = []
        first = True
        for wt in tasks or []:
            if not isinstance(wt, dict) or not wt.get("taskReferenceName"):
                continue
            t_entries, t_exits = self.build_task(wt, parent, loop)
            if first:
                entries = t_entries
                first = False
            else:
                self.connect(exits, t_entries)
            exits = t_exits
        return entries, exits, first

    def build_task(self, wt: dict, parent: str | None, loop: str | None
                   ) -> tuple[list[str], list[tuple[str, str | None]]]:
        """Node(s) of one WorkflowTask; returns (entries, exits)."""
        ref = wt["taskReferenceName"]
        task_type = wt.get("type") or "SIMPLE"
        kind = _KIND_BY_TYPE.get(task_type, "task")
        name = wt.get("name") or task_type
        subtitle = task_type if kind != "task" or task_type not in ("SIMPLE",) else name
        if kind == "task" and task_type != "SIMPLE":
            subtitle = f"{name} ({task_type})" if name != task_type else task_type
        title = f"{ref}\n{subtitle}"
        common = {"parent": parent, "loop": loop, "ref": ref, "task_type": task_type, "iters": self.iters_of(ref)}

        if task_type == "FORK_JOIN":
            self.node(ref, "fork", title, **common)
            exits: list[tuple[str, str | None]] = []
            for branch in wt.get("forkTasks") or []:
                b_entries, b_exits, empty = self.build_list(branch or [], parent, loop)
                if empty:
                    exits.append((ref, None))
                else:
                    self.connect([(ref, None)], b_entries)
                    exits.extend(b_exits)
            return [ref], exits or [(ref, None)]

        if task_type == "FORK_JOIN_DYNAMIC":
            self.node(ref, "fork", title, **common)
            return [ref], self.build_dynamic(ref, parent, loop)

        if task_type in ("SWITCH", "DECISION"):
            cases = wt.get("decisionCases") or {}
            self.node(ref, "switch", title, caseKeys=[str(k) for k in cases], **common)
            exits = []
            for case, branch in cases.items():
                b_entries, b_exits, empty = self.build_list(branch or [], parent, loop)
                if empty:
                    exits.append((ref, str(case)))
                else:
                    self.connect([(ref, str(case))], b_entries)
                    exits.extend(b_exits)
            d_entries, d_exits, empty = self.build_list(wt.get("defaultCase") or [], parent, loop)
            if empty:
                exits.append((ref, "default"))
            else:
                self.connect([(ref, "default")], d_entries)
                exits.extend(d_exits)
            return [ref], exits

        if task_type == "DO_WHILE":
            group = f"{ref}::loop"
            depth = (self.loop_depth.get(loop, 0) + 1) if loop else 1
            self.loop_depth[ref] = depth
            self.node(group, "loopgroup", ref, parent=parent, loop=loop, ref=ref, task_type=task_type, iters={})
            self.node(ref, "loop", title, parent=group, loop=loop, ref=ref, task_type=task_type,
                      iters=self.iters_of(ref), scopes=[])
            end = f"{ref}::end"
            self.node(end, "loopend", "", parent=group, loop=loop, ref=ref, task_type=task_type, iters={})
            b_entries, b_exits, empty = self.build_list(wt.get("loopOver") or [], group, ref)
            if empty:
                self.edge(ref, end)
            else:
                self.connect([(ref, None)], b_entries)
                self.connect(b_exits, [end])
            return [ref], [(end, None)]

        self.node(ref, kind, title, **common)
        if kind == "terminate":
            return [ref], []
        return [ref], [(ref, None)]

    def build_dynamic(self, ref: str, parent: str | None, loop: str | None) -> list[tuple[str, str | None]]:
        """Nodes of the tasks a dynamic fork spawned (or one summary node); returns exits."""
        forked: list[str] = []
        for fork in self.by_base.get(ref, ()):
            for child in (fork.input_data or {}).get("forkedTasks") or []:
                base = strip_iteration(str(child))
                if base not in forked:
                    forked.append(base)
        if not forked:
            return [(ref, None)]
        if len(forked) <= self.dynamic_limit:
            exits = []
            for base in forked:
                node_id = f"{ref}::dyn::{base}"
                first = self.by_base.get(base, [None])[0]
                task_type = first.task_type if first else "SIMPLE"
                kind = _KIND_BY_TYPE.get(task_type, "task")
                label = f"{base}\n{first.task_def_name if first else task_type}"
                self.node(node_id, kind, label, parent=parent, loop=loop, ref=base, task_type=task_type,
                          iters=self.iters_of(base), dynamic=True)
                self.edge(ref, node_id)
                exits.append((node_id, None))
            return exits
        node_id = f"{ref}::dyn"
        by_scope: dict[str, list[str]] = defaultdict(list)
        members = []
        for base in forked:
            attempts = self.iters_of(base)
            for scope, items in attempts.items():
                by_scope[scope].append(items[-1]["status"])
            latest = [items[-1] for _, items in sorted(attempts.items(), key=lambda kv: scope_key(kv[0]))]
            if latest:
                members.append({"ref": base, "taskId": latest[-1]["taskId"], "status": latest[-1]["status"]})
        iters = {scope: [{"status": aggregate_status(statuses), "counts": dict(Counter(statuses))}]
                 for scope, statuses in by_scope.items()}
        self.node(node_id, "dynamic", f"{len(forked)} dynamic tasks", parent=parent, loop=loop, ref=ref,
                  task_type="FORK_JOIN_DYNAMIC", iters=iters, members=members, dynamic=True)
        self.edge(ref, node_id)
        return [(node_id, None)]

    # --- runtime view ------------------------------------------------------------------------

    def fill_scopes(self) -> None:
        """Each loop node's ``scopes``: the body scopes seen in its body nodes' runs."""
        for data in self.nodes.values():
            loop = data.get("loop")
            if not loop or loop not in self.loop_depth:
                continue
            depth = self.loop_depth[loop]
            scopes = self.nodes[loop].setdefault("_scopes", set())
            for scope in data["iters"]:
                parts = [p for p in scope.split("__") if p]
                if len(parts) >= depth:
                    scopes.add("".join("__" + p for p in parts[:depth]))
        for ref in self.loop_depth:
            data = self.nodes[ref]
            data["scopes"] = sorted(data.pop("_scopes", set()), key=scope_key)

    def selected_scope(self, loop: str | None) -> str:
        """The scope shown by default for nodes of ``loop``: its latest iteration."""
        if not loop:
            return ""
        scopes = self.nodes[loop].get("scopes") or []
        return scopes[-1] if scopes else ""

    def fill_view(self) -> None:
        """Status, attempts and ``executed`` for the default view (latest iterations)."""
        for data in self.nodes.values():
            kind = data["kind"]
            if kind in ("loopgroup", "loopend"):
                continue
            attempts = data["iters"].get(self.selected_scope(data.get("loop")), [])
            data["attempts"] = len(attempts)
            data["status"] = attempts[-1]["status"] if attempts else None
            data["executed"] = bool(attempts)
        for data in self.nodes.values():
            if data["kind"] in ("loopgroup", "loopend"):
                loop_node = self.nodes[data["ref"]]
                data["status"] = loop_node["status"] if data["kind"] == "loopgroup" else None
                data["executed"] = loop_node["executed"] and (
                    data["kind"] == "loopgroup" or loop_node["status"] in TERMINAL_TASK)
        started = bool(self.tasks)
        self.nodes[START_ID].update(executed=started, status="COMPLETED" if started else None)
        done = self.workflow_status in TERMINAL_WORKFLOW
        self.nodes[END_ID].update(executed=done, status=self.workflow_status if done else None)
        for edge in self.edges.values():
            edge["executed"] = self.edge_executed(edge)

    def edge_executed(self, edge: dict) -> bool:
        """Whether the path along this edge ran (taken case only, for SWITCH edges)."""
        source = self.nodes[edge["source"]]
        target = self.nodes[edge["target"]]
        if not (source.get("executed") and target.get("executed")):
            return False
        if source["kind"] == "switch" and edge.get("label"):
            attempts = source["iters"].get(self.selected_scope(source.get("loop")), [])
            case = attempts[-1].get("case") if attempts else None
            label = edge["label"]
            if label == "default":
                return case is not None and str(case) not in source.get("caseKeys", [])
            return str(case) == label
        return True

    def build(self) -> dict:
        """The whole graph: start, the task tree, end, then the runtime view."""
        self.node(START_ID, "start", "start", parent=None, loop=None, iters={})
        self.node(END_ID, "end", "end", parent=None, loop=None, iters={})
        entries, exits, empty = self.build_list(self.definition.get("tasks") or [], None, None)
        if empty:
            self.edge(START_ID, END_ID)
        else:
            self.connect([(START_ID, None)], entries)
            self.connect(exits, [END_ID])
        self.fill_scopes()
        if self.preview:
            for data in self.nodes.values():
                data.update(status=None, attempts=0, executed=True)
            for edge in self.edges.values():
                edge["executed"] = True
        else:
            self.fill_view()
        nodes = list(self.nodes.values())
        edges = list(self.edges.values())
        return {"nodes": nodes, "edges": edges, "signature": signature(nodes, edges), "preview": self.preview}


def signature(nodes: list[dict], edges: list[dict]) -> str:
    """A hash of the graph's structure (node ids, parents, kinds, edges): it changes when
    the layout must be redone, not when only statuses change."""
    h = hashlib.sha1()
    for n in nodes:
        h.update(f"n|{n['id']}|{n.get('parent') or ''}|{n['kind']}|{n['title']}\n".encode())
    for e in edges:
        h.update(f"e|{e['id']}\n".encode())
    return h.hexdigest()


def build_graph(definition: dict, tasks: list[TaskState] | None = None, workflow_status: str | None = None,
                *, dynamic_limit: int = 40) -> dict:
    """Cytoscape elements for a definition (``tasks=None``: a preview without runtime
    state) or an execution (its tasks, any order, and its status).

    Returns ``{"nodes": [data...], "edges": [data...], "signature": str, "preview": bool}``
    where node data has ``id, kind, title, ref, type, loop, parent?, iters, status,
    attempts, executed`` (plus ``caseKeys`` for switches, ``scopes`` for loops, ``members``
    for a dynamic summary) and edge data ``id, source, target, label?, executed``.
    """
    return _Builder(definition, tasks, workflow_status, dynamic_limit).build()


def node_index(graph: dict) -> dict[str, dict]:
    """``{node id: node data}`` of a built graph."""
    return {n["id"]: n for n in graph["nodes"]}


def diff_overlay(old: dict, new: dict, diff: dict) -> dict:
    """The graph of WorkflowDef ``new`` (``build_graph`` shape) marked against ``old``:
    task nodes carry ``diff`` = ``"added"`` or ``"changed"`` (``diff``'s reference lists,
    as ``selectors.definition_diff`` returns them), and every task of ``old`` that
    ``new`` lacks (``diff["removed"]``) is drawn too, as a ``"removed"`` node joined by its
    old edges (``diff: "removed"``) to the neighbours that are still there."""
    overlay = build_graph(new, None)
    marks = {**{r: "changed" for r in diff["changed"]}, **{r: "added" for r in diff["added"]}}
    for node in overlay["nodes"]:
        if node.get("ref") in marks and node["kind"] not in ("loopgroup", "loopend"):
            node["diff"] = marks[node["ref"]]
    removed = set(diff["removed"])
    if not removed:
        return overlay
    before = build_graph(old, None)
    ids = {n["id"] for n in overlay["nodes"]}
    ghosts = [dict(n) for n in before["nodes"] if n.get("ref") in removed and n["id"] not in ids]
    ghost_ids = {n["id"] for n in ghosts}
    for node in ghosts:
        node["diff"] = "removed"
        if node.get("parent") and node["parent"] not in ids | ghost_ids:
            del node["parent"]
    ids |= ghost_ids
    edge_ids = {e["id"] for e in overlay["edges"]}
    for edge in before["edges"]:
        if (edge["source"] in ghost_ids or edge["target"] in ghost_ids) and edge["source"] in ids \
                and edge["target"] in ids and edge["id"] not in edge_ids:
            overlay["edges"].append({**edge, "diff": "removed"})
    overlay["nodes"] += ghosts
    return overlay
