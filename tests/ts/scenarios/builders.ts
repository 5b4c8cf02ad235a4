// The workflow builders: set-variable, inline, JQ, switch, fork/join, do-while,
// sub-workflow (registered and inline), HTTP, WAIT (duration) and terminate, in one
// definition run to completion; executeWorkflow on a definition of system tasks only.
import assert from "node:assert/strict";
import {
  ConductorWorkflow, OrkesClients, doWhileTask, httpTask, inlineTask, jsonJqTask, newLoopTask,
  setVariableTask, simpleTask, subWorkflowTask, switchTask, terminateTask, waitTaskDuration,
} from "@io-orkes/conductor-javascript";
import { attempts, byRef, unique, waitForStatus } from "../lib/util.js";

const clients = await OrkesClients.from();
const executor = clients.getWorkflowClient();
const serverUrl = (process.env.CONDUCTOR_SERVER_URL ?? "http://localhost:8080").replace(/\/api\/?$/, "");

const withInput = <T extends { inputParameters?: Record<string, unknown> }>(task: T, input: Record<string, unknown>): T =>
  ({ ...task, inputParameters: { ...task.inputParameters, ...input } });

// A registered child workflow: doubles its input.
const childName = unique("ts_child");
await new ConductorWorkflow(executor, childName, 1)
  .add(withInput(inlineTask("twice", "$.v * 2"), { v: "${workflow.input.v}" }))
  .outputParameters({ twice: "${twice.output.result}" })
  .register(true);

// An inline (unregistered) child, carried in the parent's definition.
const inlineChild = new ConductorWorkflow(executor, unique("ts_inline_child"), 1)
  .add(withInput(jsonJqTask("upper", ".word | ascii_upcase"), { word: "${workflow.input.word}" }))
  .outputParameters({ upper: "${upper.output.result}" });

const name = unique("ts_kitchen");
const kitchen = new ConductorWorkflow(executor, name, 1)
  .add(setVariableTask("vars", { greeting: "hello", n: "${workflow.input.n}" }))
  .add(withInput(inlineTask("double", "$.n * 2"), { n: "${workflow.variables.n}" }))
  .add(withInput(jsonJqTask("jq", ".items | map(. * 10)"), { items: "${workflow.input.items}" }))
  .add(switchTask("route", "${double.output.result}", {
    "42": [withInput(inlineTask("answer", "'the answer'"), {})],
  }, [withInput(inlineTask("other", "'something else'"), {})]))
  .fork([
    [withInput(inlineTask("left", "$.a + 1"), { a: "${double.output.result}" })],
    [withInput(jsonJqTask("right", ".xs | add"), { xs: "${jq.output.result}" })],
  ])
  .add(doWhileTask("loop", "if ($.loop['iteration'] < 3) { true; } else { false; }", [
    withInput(inlineTask("tick", "$.i * 100"), { i: "${loop.output.iteration}" }),
  ]))
  .add(newLoopTask("repeat", 2, [withInput(inlineTask("rep", "'r'"), {})]))
  .add(withInput(subWorkflowTask("child", childName, 1), { v: "${left.output.result}" }))
  .add({ ...inlineChild.toSubWorkflowTask("inline_child"), inputParameters: { word: "${workflow.variables.greeting}" } } as any)
  .add(httpTask("http", { uri: `${serverUrl}/api/health`, method: "GET" }))
  .add(waitTaskDuration("pause", "1s"))
  // TERMINATE ends the run at once; its `workflowOutput` becomes the workflow's output.
  .add(withInput(terminateTask("stop", "COMPLETED", "done early"), {
    workflowOutput: {
      greeting: "${workflow.variables.greeting}",
      doubled: "${double.output.result}",
      jq: "${jq.output.result}",
      answer: "${answer.output.result}",
      left: "${left.output.result}",
      right: "${right.output.result}",
      child: "${child.output.twice}",
      upper: "${inline_child.output.upper}",
      healthy: "${http.output.response.body.healthy}",
      status: "${http.output.response.statusCode}",
    },
  }))
  .add(withInput(inlineTask("never", "'unreachable'"), {}));
await kitchen.register(true);

const id = await kitchen.startWorkflow({ n: 21, items: [1, 2, 3] });
const wf = await waitForStatus(executor, id, "COMPLETED", 90_000);
assert.deepEqual(wf.output, {
  greeting: "hello", doubled: 42, jq: [10, 20, 30], answer: "the answer", left: 43, right: 60,
  child: 86, upper: "HELLO", healthy: true, status: 200,
});
const tasks = byRef(wf);
assert.deepEqual(wf.variables, { greeting: "hello", n: 21 });
assert.ok(!tasks.other, "the SWITCH took the \"42\" case only");
assert.equal(tasks.route.outputData?.evaluationResult?.[0], "42");
assert.equal(tasks.loop.outputData?.iteration, 3);
assert.deepEqual(attempts(wf, "tick__1").length + attempts(wf, "tick__2").length + attempts(wf, "tick__3").length, 3);
assert.equal(byRef(wf)["tick__3"].outputData?.result, 300);
assert.equal(tasks.repeat.outputData?.iteration, 2);
assert.equal(tasks.pause.status, "COMPLETED");
assert.equal(tasks.stop.status, "COMPLETED");
assert.ok(!tasks.never, "nothing runs after TERMINATE");
assert.equal(wf.reasonForIncompletion, "done early");
const child = await executor.getWorkflow(tasks.child.subWorkflowId, true);
assert.equal(child.status, "COMPLETED");
assert.equal(child.parentWorkflowId, id);

// executeWorkflow (sync) on system tasks only: the answer is the finished run.
const quick = new ConductorWorkflow(executor, unique("ts_quick"), 1)
  .add(withInput(inlineTask("sum", "$.a + $.b"), { a: "${workflow.input.a}", b: "${workflow.input.b}" }))
  .outputParameters({ sum: "${sum.output.result}" });
await quick.register(true);
const run = await quick.execute({ a: 2, b: 3 });
assert.equal(run.status, "COMPLETED");
assert.deepEqual(run.output, { sum: 5 });
assert.equal((run as any).signalTimeout, false);
const direct = await executor.executeWorkflow({ name: quick.getName(), version: 1, input: { a: 1, b: 1 } },
  quick.getName(), 1, unique("req"));
assert.deepEqual(direct.output, { sum: 2 });
console.log("builders: ok");
// The client refreshes its auth token on a timer that keeps node alive: exit explicitly.
process.exit(0);
