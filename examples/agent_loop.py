"""Agent loop: the DO_WHILE example of the "dynamic workflows in Python" article.

A think/act loop: ``call_llm`` (``think``) picks the next tool call for the goal,
``execute_tool`` (``act``) runs it, and the ``DoWhileTask`` repeats both until the tool
reports it is done. Then ``summarize_results`` reads ``act.output("results")``.

The loop condition is the article's, evaluated by the server as JavaScript::

    if ($.act['output']['done'] == true) { false; } else { true; }

In it ``$.act`` is the latest ``act`` task's output map, so ``execute_tool`` returns
``{"output": {"done": ...}, "results": [...]}``: ``$.act['output']['done']`` is that
inner ``done``. The article's iteration cap is ``loop.input_parameters`` ``max_iterations``
(10); the server does not read it by itself, the tool does: it gets the loop's current
``iteration`` and ``max_iterations`` as input and reports done at the cap.

The "LLM" here is a stand-in with the same contract: the goal is a ``;``-separated list
of things to look up; each turn it asks for a ``web_search`` of the next one (it sees
the results so far), and ``finish`` once all are looked up. So a goal of N parts takes
N + 1 iterations (capped at ``max_iterations``).

    make run                                   # server on http://127.0.0.1:8080
    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    python examples/agent_loop.py

No ``from __future__ import annotations`` here: the SDK maps task input to worker
arguments by their annotations and needs real types, not strings.
"""
import sys
import time
from typing import List

from conductor.client.automator.task_handler import TaskHandler
from conductor.client.configuration.configuration import Configuration
from conductor.client.orkes_clients import OrkesClients
from conductor.client.worker.worker_task import worker_task
from conductor.client.workflow.conductor_workflow import ConductorWorkflow
from conductor.client.workflow.executor.workflow_executor import WorkflowExecutor
from conductor.client.workflow.task.do_while_task import DoWhileTask

try:  # imported from the repository root (the tests), or run as python examples/<name>.py
    from examples.registration import register_unless_present
except ImportError:
    from registration import register_unless_present

WORKFLOW_NAME = "agent_loop"
WORKFLOW_VERSION = 1
MAX_ITERATIONS = 10
TERMINATION_CONDITION = "if ($.act['output']['done'] == true) { false; } else { true; }"
TERMINAL_STATUSES = ("COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED")


def plan_steps(goal: str) -> List[str]:
    return [part.strip() for part in (goal or "").split(";") if part.strip()]


@worker_task(task_definition_name="call_llm")
def call_llm(prompt: str, history: List[str] = None) -> dict:
    """Decide the next action from the goal and what has been found so far."""
    steps = plan_steps(prompt)
    found = list(history or [])
    if len(found) < len(steps):
        query = steps[len(found)]
        return {"thought": f"I still need: {query}", "tool": "web_search", "args": {"query": query}}
    return {"thought": "I have everything I need", "tool": "finish", "args": {"answer_parts": len(found)}}


@worker_task(task_definition_name="execute_tool")
def execute_tool(tool: str, args: dict, history: List[str] = None, iteration: int = 1,
                 max_iterations: int = MAX_ITERATIONS) -> dict:
    """Run the tool the LLM chose; report done on ``finish`` or at the iteration cap."""
    results = list(history or [])
    if tool == "web_search":
        results.append(f"found: {(args or {}).get('query')}")
    if tool == "finish":
        done, reason = True, "finished"
    elif max_iterations is not None and iteration is not None and iteration >= max_iterations:
        done, reason = True, f"stopped at max_iterations={max_iterations}"
    else:
        done, reason = False, None
    return {"output": {"done": done, "reason": reason, "iteration": iteration}, "results": results}


@worker_task(task_definition_name="summarize_results")
def summarize_results(results: List[str]) -> dict:
    results = list(results or [])
    return {"summary": "; ".join(results), "count": len(results)}


def agent_loop_workflow(executor: WorkflowExecutor, register: bool = True) -> ConductorWorkflow:
    """Build ``agent_loop`` v1 (do-while think >> act, then summarize) and register it."""
    workflow = ConductorWorkflow(name=WORKFLOW_NAME, version=WORKFLOW_VERSION, executor=executor)

    # The task(s) to repeat each iteration. Inside the loop ``${act.output.results}`` is
    # the previous iteration's act (nothing in the first one).
    think = call_llm(
        task_ref_name="think",
        prompt=workflow.input("goal"),
        history="${act.output.results}",
    )
    act = execute_tool(
        task_ref_name="act",
        tool=think.output("tool"),
        args=think.output("args"),
        history="${act.output.results}",
        iteration="${agent_loop.output.iteration}",
        max_iterations="${agent_loop.input.max_iterations}",
    )

    # Loop until the LLM says it's done (max 10 iterations)
    loop = DoWhileTask(
        task_ref_name="agent_loop",
        termination_condition=TERMINATION_CONDITION,
        tasks=[think, act],
    )
    loop.input_parameters.update({"max_iterations": MAX_ITERATIONS})

    summarize = summarize_results(task_ref_name="summarize", results=act.output("results"))

    workflow >> loop >> summarize
    workflow.output_parameters({
        "summary": summarize.output("summary"),
        "count": summarize.output("count"),
        "iterations": loop.output("iteration"),
    })
    if register:
        register_unless_present(executor, workflow)
    return workflow


def wait_for_completion(executor: WorkflowExecutor, workflow_id: str, timeout_seconds: float = 60):
    """Poll the execution until it ends or ``timeout_seconds`` pass; return the last read."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        workflow = executor.get_workflow(workflow_id=workflow_id, include_tasks=False)
        if workflow is not None and workflow.status in TERMINAL_STATUSES:
            return workflow
        if time.monotonic() >= deadline:
            return workflow
        time.sleep(0.25)


def main() -> int:
    config = Configuration()  # CONDUCTOR_SERVER_URL, default http://localhost:8080/api
    clients = OrkesClients(configuration=config)
    executor = clients.get_workflow_executor()

    task_handler = TaskHandler(workers=[], configuration=config, scan_for_annotated_workers=True)
    task_handler.start_processes()
    try:
        workflow = agent_loop_workflow(executor)
        workflow_id = workflow.start_workflow_with_input(workflow_input={
            "goal": "flights to Lisbon; hotels near Alfama; weather in May",
        })
        print(f"Started workflow: {workflow_id}")
        done = wait_for_completion(executor, workflow_id)
        print(f"Status: {done.status if done else None}")
        print(f"Output: {done.output if done else None}")
        print(f"View: {config.ui_host}/execution/{workflow_id}")
    finally:
        task_handler.stop_processes()
    return 0 if done is not None and done.status == "COMPLETED" else 1


if __name__ == "__main__":
    sys.exit(main())
