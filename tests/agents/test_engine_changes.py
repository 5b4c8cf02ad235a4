"""The two engine behaviours the compiled agents rely on, checked on plain workflows:

* a DO_WHILE's ``inputParameters`` are resolved again at each evaluation of its
  ``loopCondition`` (Conductor's DoWhile.evaluateCondition calls getTaskInputV2 each
  time), so a loop reading ``${workflow.variables.x}`` sees a variable changed meanwhile;
* an LLM_CHAT_COMPLETE in a loop gets, beside its own earlier answers, the ``result`` of
  each ``participants`` task (``{taskReferenceName: role}``) as a message of that role,
  in the order the tasks ran (Conductor's ChatCompleteTaskMapper.getHistory).
"""
from __future__ import annotations

from apps.engine import executor
from tests.ai.conftest import ai_settings, api, cluster, llm, mcp, mcp_sse  # noqa: F401 - fixtures
from tests.factories import simple_task, task_def, unique, workflow_def


def test_a_loop_condition_sees_a_variable_changed_during_the_loop(api):
    name, worker = unique("vloop"), unique("step")
    api.register_task_defs(task_def(worker))
    api.register_workflow(workflow_def(name, [
        {"name": "init", "taskReferenceName": "init", "type": "SET_VARIABLE", "inputParameters": {"halt": False}},
        {"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
         "inputParameters": {"halt": "${workflow.variables.halt}"},
         "loopCondition": "if ($.halt != true && $.loop['iteration'] < 10) { true; } else { false; }",
         "loopOver": [simple_task(worker, "step")]}]))
    wid = api.start(name, {})
    api.complete(api.poll_one(worker))
    executor.workflow_variables_update(workflow_id=wid, variables={"halt": True})
    api.complete(api.poll_one(worker))
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    assert [t["referenceTaskName"] for t in wf["tasks"] if t["taskType"] == worker] == ["step__1", "step__2"]


def test_participants_join_the_loop_history_in_order(api, cluster, llm, ai_settings):
    answers = iter(["first draft", "second draft"])
    llm.chat_handler = lambda req: {"text": next(answers)}
    name = unique("participants")
    api.register_workflow(workflow_def(name, [
        {"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE", "inputParameters": {},
         "loopCondition": "if ($.loop['iteration'] < 2) { true; } else { false; }",
         "loopOver": [
             {"name": "chat", "taskReferenceName": "chat", "type": "LLM_CHAT_COMPLETE", "inputParameters": {
                 "llmProvider": "openai", "model": "gpt-stub", "participants": {"critic": "user"},
                 "messages": [{"role": "user", "message": "write"}]}},
             {"name": "critic", "taskReferenceName": "critic", "type": "INLINE", "inputParameters": {
                 "evaluatorType": "javascript", "expression": "(function () { return 'shorter, please'; })();"}}]}]))
    wid = api.start(name, {})
    for _ in range(3):
        cluster.run()
    assert api.workflow(wid)["status"] == "COMPLETED"
    second = llm.chats()[-1]["messages"]
    assert second == [{"role": "user", "content": "write"}, {"role": "assistant", "content": "first draft"},
                      {"role": "user", "content": "shorter, please"}]
