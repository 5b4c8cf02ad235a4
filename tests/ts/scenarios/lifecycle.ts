// WorkflowExecutor lifecycle: start, getWorkflow, getWorkflowStatus, pause/resume,
// terminate, restart, retry, search; a TaskManager worker does the work.
import assert from "node:assert/strict";
import {
  ConductorWorkflow, OrkesClients, TaskManager, simpleTask, taskDefinition, type ConductorWorker,
} from "@io-orkes/conductor-javascript";
import { attempts, byRef, sleep, unique, waitFor, waitForStatus } from "../lib/util.js";

const clients = await OrkesClients.from();
const executor = clients.getWorkflowClient();
const metadata = clients.getMetadataClient();

const step = unique("ts_life_step");
const flaky = unique("ts_life_flaky");
await metadata.registerTasks([
  taskDefinition({ name: step, retryCount: 0, retryDelaySeconds: 0 }),
  taskDefinition({ name: flaky, retryCount: 0, retryDelaySeconds: 0 }),
]);
const name = unique("ts_life");
const wf = new ConductorWorkflow(executor, name, 1)
  .add(simpleTask("first", step, { n: "${workflow.input.n}" }))
  .add(simpleTask("second", flaky, { n: "${first.output.n}" }))
  .outputParameters({ n: "${second.output.n}" });
await wf.register(true);

let failSecond = true;
const workers: ConductorWorker[] = [
  { taskDefName: step, execute: async (task) => ({ status: "COMPLETED", outputData: { n: (task.inputData?.n as number) + 1 } }) },
  {
    taskDefName: flaky,
    execute: async (task) => failSecond
      ? { status: "FAILED", reasonForIncompletion: "not today", outputData: {} }
      : { status: "COMPLETED", outputData: { n: (task.inputData?.n as number) * 10 } },
  },
];
const manager = new TaskManager(clients.getClient(), workers, { options: { pollInterval: 100, concurrency: 1 } });

// Paused before any worker polls: nothing moves; resumed, it runs to the failing task.
const correlationId = unique("corr");
const id = await executor.startWorkflow({ name, version: 1, input: { n: 1 }, correlationId });
await executor.pause(id);
assert.equal((await executor.getWorkflowStatus(id, false, false)).status, "PAUSED");
manager.startPolling();
try {
  await sleep(1500);
  let current = await executor.getWorkflow(id, true);
  assert.equal(current.status, "PAUSED");
  assert.ok(!byRef(current).second, "no task is scheduled while paused");
  await executor.resume(id);
  const failed = await waitForStatus(executor, id, "FAILED");
  assert.equal(byRef(failed).first.status, "COMPLETED");
  assert.equal(byRef(failed).second.status, "FAILED");
  assert.equal(byRef(failed).second.reasonForIncompletion, "not today");
  assert.ok(failed.reasonForIncompletion, "the workflow says why it failed");

  // retry: a new attempt of the failed task only
  failSecond = false;
  await executor.retry(id, false);
  const retried = await waitForStatus(executor, id, "COMPLETED");
  assert.deepEqual(retried.output, { n: 20 });
  assert.equal(attempts(retried, "first").length, 1);
  assert.equal(attempts(retried, "second").length, 2);

  // restart: the same id runs again from the start
  await executor.restart(id, true);
  const restarted = await waitFor(executor, id, (w) => w.status === "COMPLETED" && attempts(w, "second").length === 1,
    "a completed fresh run");
  assert.equal(attempts(restarted, "first").length, 1);
  assert.deepEqual(restarted.output, { n: 20 });

  const status = await executor.getWorkflowStatus(id, true, true);
  assert.equal(status.status, "COMPLETED");
  assert.deepEqual(status.output, { n: 20 });

  // terminate a running one (nobody polls its task type)
  const idle = new ConductorWorkflow(executor, unique("ts_life_idle"), 1)
    .add(simpleTask("first", unique("ts_nobody_polls"), {}));
  await idle.register(true);
  const other = await idle.startWorkflow({ n: 5 }, correlationId);
  await executor.terminate(other, "stopped by the suite");
  const terminated = await executor.getWorkflow(other, true);
  assert.equal(terminated.status, "TERMINATED");
  assert.equal(terminated.reasonForIncompletion, "stopped by the suite");
  assert.equal(byRef(terminated).first.status, "CANCELED");

  // search by correlation id and by status
  let hits: Array<{ workflowId?: string; status?: string }> = [];
  for (let i = 0; i < 50; i++) {
    const result = await executor.search(0, 10, `correlationId = '${correlationId}'`, "*");
    hits = result.results ?? [];
    if (hits.length === 2) break;
    await sleep(100);
  }
  assert.deepEqual(hits.map((h) => h.workflowId).sort(), [id, other].sort());
  const terminatedOnly = await executor.search(0, 10, `correlationId = '${correlationId}' AND status = 'TERMINATED'`, "*");
  assert.deepEqual((terminatedOnly.results ?? []).map((h) => h.workflowId), [other]);
  assert.equal(terminatedOnly.totalHits, 1);

  // get by correlation ids
  const byCorrelation = await executor.getByCorrelationIds({ workflowNames: [name, idle.getName()], correlationIds: [correlationId] }, true, false);
  assert.equal(byCorrelation[correlationId].length, 2);
  console.log("lifecycle: ok");
} finally {
  await manager.stopPolling();
}
// The client refreshes its auth token on a timer that keeps node alive: exit explicitly.
process.exit(0);
