// WAIT tasks completed from outside, every way the SDK offers: by reference name, by
// task id, by the synchronous update, and by signal (sync with each return strategy,
// and fire-and-forget); an HTTP task with asyncComplete completed the same way.
import assert from "node:assert/strict";
import {
  ConductorWorkflow, OrkesClients, ReturnStrategy, TaskResultStatusEnum, httpTask, simpleTask, waitTaskDuration,
} from "@io-orkes/conductor-javascript";
import { byRef, unique, waitFor, waitForStatus } from "../lib/util.js";

const clients = await OrkesClients.from();
const executor = clients.getWorkflowClient();
const taskClient = clients.getTaskClient();

const wait = (ref: string) => ({ name: ref, taskReferenceName: ref, type: "WAIT" as const, inputParameters: { step: ref } });
const inProgress = (ref: string) => (wf: { tasks?: any[] }) => byRef(wf)[ref]?.status === "IN_PROGRESS";

const name = unique("ts_waits");
const flow = new ConductorWorkflow(executor, name, 1)
  .add(wait("by_ref")).add(wait("by_id")).add(wait("by_sync")).add(wait("by_signal")).add(wait("by_async_signal"))
  .outputParameters({
    byRef: "${by_ref.output}", byId: "${by_id.output}", bySync: "${by_sync.output}",
    bySignal: "${by_signal.output}", byAsyncSignal: "${by_async_signal.output}",
  });
await flow.register(true);

// execute blocks until the first WAIT: answered at once, not timed out
const run = await flow.execute({ order: "o-1" });
assert.equal(run.status, "RUNNING");
assert.equal((run as any).signalTimeout, false);
const id = run.workflowId!;
assert.equal(byRef(run).by_ref.status, "IN_PROGRESS");

// 1. by reference name
const updatedId = await executor.updateTaskByRefName("by_ref", id, "COMPLETED", { via: "ref" });
let wf = await waitFor(executor, id, inProgress("by_id"), "by_id waiting");
assert.equal(updatedId, byRef(wf).by_ref.taskId);

// 2. by task id
const taskId = byRef(wf).by_id.taskId;
assert.equal(await executor.updateTask(taskId, id, "COMPLETED", { via: "id" }), taskId);
const task = await taskClient.getTask(taskId);
assert.equal(task.status, "COMPLETED");
assert.deepEqual(task.outputData, { via: "id" });
await waitFor(executor, id, inProgress("by_sync"), "by_sync waiting");

// 3. synchronous update by reference: the answer is the workflow after the update
const afterSync = await taskClient.updateTaskSync(id, "by_sync", "COMPLETED", { via: "sync" });
assert.equal(afterSync.workflowId, id);
assert.equal(byRef(afterSync).by_sync.status, "COMPLETED");
assert.equal(byRef(afterSync).by_signal.status, "IN_PROGRESS");

// 4. signal (sync): the next blocking task's input comes back
const signalled = await executor.signal(id, TaskResultStatusEnum.COMPLETED, { via: "signal" },
  ReturnStrategy.BLOCKING_TASK_INPUT);
assert.ok(signalled.isBlockingTaskInput(), signalled.getSummary());
assert.deepEqual(signalled.getTaskInput(), { step: "by_async_signal" });
assert.equal(signalled.getBlockingTask().referenceTaskName, "by_async_signal");
assert.equal(signalled.getTargetWorkflowId(), id);

// 5. signal (fire and forget): the run completes
await executor.signalAsync(id, TaskResultStatusEnum.COMPLETED, { via: "async signal" });
wf = await waitForStatus(executor, id, "COMPLETED");
// WorkflowExecutor.signal/signalAsync send the output wrapped as {taskOutput: ...}
assert.deepEqual(wf.output, {
  byRef: { via: "ref" }, byId: { via: "id" }, bySync: { via: "sync" },
  bySignal: { taskOutput: { via: "signal" } }, byAsyncSignal: { taskOutput: { via: "async signal" } },
});

// Signal strategies on a fresh run: target workflow, blocking workflow, blocking task.
const second = await flow.startWorkflow({ order: "o-2" });
await waitFor(executor, second, inProgress("by_ref"), "by_ref waiting");
const target = await executor.signal(second, TaskResultStatusEnum.COMPLETED, { n: 1 });
assert.ok(target.isTargetWorkflow());
assert.equal(target.getWorkflow().status, "RUNNING");
assert.equal(byRef(target.getWorkflow()).by_ref.status, "COMPLETED");
const blockingWf = await executor.signal(second, TaskResultStatusEnum.COMPLETED, { n: 2 }, ReturnStrategy.BLOCKING_WORKFLOW);
assert.ok(blockingWf.isBlockingWorkflow());
assert.equal(blockingWf.getWorkflowId(), second);
const blockingTask = await executor.signal(second, TaskResultStatusEnum.COMPLETED, { n: 3 }, ReturnStrategy.BLOCKING_TASK);
assert.ok(blockingTask.isBlockingTask());
assert.equal(blockingTask.getBlockingTask().referenceTaskName, "by_signal");
assert.equal(blockingTask.getBlockingTask().status, "IN_PROGRESS");
// a FAILED signal fails the WAIT and the run
await executor.signal(second, TaskResultStatusEnum.FAILED, { reason: "rejected" });
assert.equal((await waitForStatus(executor, second, "FAILED")).status, "FAILED");
// nothing left to signal: the SDK raises the server's 404
await assert.rejects(executor.signal(second, TaskResultStatusEnum.COMPLETED, {}), /no blocked task/i);

// A WAIT with a duration completes by itself; execute returns when time runs out first.
const timed = new ConductorWorkflow(executor, unique("ts_timed_wait"), 1)
  .add(waitTaskDuration("nap", "1s"))
  .add(simpleTask("nobody_polls", unique("ts_unpolled"), {}));
await timed.register(true);
const timedRun = await executor.executeWorkflow({ name: timed.getName(), version: 1, input: {} },
  timed.getName(), 1, unique("req"), "", 6, "SYNCHRONOUS" as any, ReturnStrategy.TARGET_WORKFLOW);
assert.equal(timedRun.status, "RUNNING");
assert.equal((timedRun as any).signalTimeout, true);
assert.equal(byRef(timedRun.getWorkflow()).nap.status, "COMPLETED");
// An HTTP task with asyncComplete stays IN_PROGRESS after its call until completed from outside.
const serverUrl = (process.env.CONDUCTOR_SERVER_URL ?? "http://localhost:8080").replace(/\/api\/?$/, "");
const callback = new ConductorWorkflow(executor, unique("ts_http_async"), 1)
  .add(httpTask("start_job", { uri: `${serverUrl}/api/health`, method: "GET" }, true))
  .outputParameters({ jobId: "${start_job.output.jobId}" });
await callback.register(true);
const cbId = await callback.startWorkflow({});
const called = await waitFor(executor, cbId, (w) => byRef(w).start_job?.outputData?.response?.statusCode === 200,
  "the HTTP call made");
assert.equal(byRef(called).start_job.status, "IN_PROGRESS");
assert.equal(called.status, "RUNNING");
await executor.updateTaskByRefName("start_job", cbId, "COMPLETED", { jobId: "job-7" });
assert.deepEqual((await waitForStatus(executor, cbId, "COMPLETED")).output, { jobId: "job-7" });
console.log("wait completion: ok");
// The client refreshes its auth token on a timer that keeps node alive: exit explicitly.
process.exit(0);
