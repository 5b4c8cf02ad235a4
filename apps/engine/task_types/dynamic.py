"""DYNAMIC: a worker task whose name is read at run time from the input key named by
``dynamicTaskNameParam``; the TaskDef of that name must exist.
Source: DynamicTaskMapper (messages verbatim)."""
from __future__ import annotations

from apps.engine import params
from apps.engine.outcome import TerminateWorkflow
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType


@register
class Dynamic(TaskType):
    type_name = "DYNAMIC"

    def map(self, d, workflow_task, retry_count):
        param = workflow_task.get("dynamicTaskNameParam")
        task_input = params.resolve_task_input(workflow_task.get("inputParameters") or {}, d.wf, doc=d.document())
        name = task_input.get(param) if param else None
        if not name or not isinstance(name, str):
            raise TerminateWorkflow(f"Cannot map a dynamic task based on the parameter and input. "
                                    f"Parameter= {param}, input= {params.java_string(task_input)}", "FAILED")
        task_def = d.task_def_lookup(name)
        if task_def is None:
            raise TerminateWorkflow(f"Invalid task specified.  Cannot find task by name {name} in the task definitions",
                                    "FAILED")
        concrete = {**workflow_task, "name": name, "type": "SIMPLE", "taskDefinition": task_def}
        task = d.new_task(concrete, task_type="SIMPLE", retry_count=retry_count, task_def=task_def,
                          store_workflow_task=True)
        return [task]
