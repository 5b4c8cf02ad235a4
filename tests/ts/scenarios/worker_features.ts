// TaskManager workers beyond the happy path: IN_PROGRESS with callbackAfterSeconds and
// task logs (TaskContext and TaskClient), a failure retried by the TaskDef's retryCount,
// and NonRetryableException (FAILED_WITH_TERMINAL_ERROR: no retry, the run fails).
import assert from "node:assert/strict";
import {
  ConductorWorkflow, NonRetryableException, OrkesClients, TaskManager, getTaskContext, simpleTask,
  taskDefinition, type ConductorWorker,
} from "@io-orkes/conductor-javascript";
import { attempts, byRef, unique, waitForStatus } from "../lib/util.js";

const clients = await OrkesClients.from();
const executor = clients.getWorkflowClient();
const metadata = clients.getMetadataClient();
const taskClient = clients.getTaskClient();

const poller = unique("ts_poller");
const flaky = unique("ts_flaky");
const strict = unique("ts_strict");
await metadata.registerTasks([
  taskDefinition({ name: poller, retryCount: 0, retryDelaySeconds: 0 }),
  taskDefinition({ name: flaky, retryCount: 2, retryDelaySeconds: 0 }),
  taskDefinition({ name: strict, retryCount: 3, retryDelaySeconds: 0 }),
]);

const polls: Record<string, number> = {};
const flakyCalls: number[] = [];
let strictCalls = 0;
const workers: ConductorWorker[] = [
  {
    // Not done until its third poll; asks to be called back after 1 s each time.
    taskDefName: poller,
    execute: async (task) => {
      const seen = (polls[task.taskId!] = (polls[task.taskId!] ?? 0) + 1);
      getTaskContext()?.addLog(`check ${seen}`);
      if (seen < 3) return { status: "IN_PROGRESS", callbackAfterSeconds: 1, outputData: { seen } };
      return { status: "COMPLETED", outputData: { seen, done: true } };
    },
  },
  {
    // Fails on its first attempt (a plain Error: retried), succeeds on the next.
    taskDefName: flaky,
    execute: async (task) => {
      flakyCalls.push(task.retryCount ?? 0);
      if ((task.retryCount ?? 0) === 0) throw new Error("temporary outage");
      return { status: "COMPLETED", outputData: { attempt: task.retryCount } };
    },
  },
  {
    taskDefName: strict,
    execute: async () => {
      strictCalls++;
      throw new NonRetryableException("order is invalid");
    },
  },
];
const manager = new TaskManager(clients.getClient(), workers, { options: { pollInterval: 100, concurrency: 1 } });
manager.startPolling();
try {
  const name = unique("ts_worker_features");
  const flow = new ConductorWorkflow(executor, name, 1)
    .add(simpleTask("poll", poller, {}))
    .add(simpleTask("flaky", flaky, {}))
    .outputParameters({ seen: "${poll.output.seen}", attempt: "${flaky.output.attempt}" });
  await flow.register(true);
  const id = await flow.startWorkflow({});
  const wf = await waitForStatus(executor, id, "COMPLETED", 90_000);
  assert.deepEqual(wf.output, { seen: 3, attempt: 1 });

  const poll = byRef(wf).poll;
  assert.equal(attempts(wf, "poll").length, 1, "IN_PROGRESS keeps the same task");
  assert.equal(poll.pollCount, 3);
  assert.ok(poll.endTime - poll.startTime >= 2000, "two callbacks of 1 s each");
  const logs = await taskClient.getTaskLogs(poll.taskId);
  assert.deepEqual(logs.map((l) => l.log).filter((l) => l?.startsWith("check")), ["check 1", "check 2", "check 3"]);
  await taskClient.addTaskLog(poll.taskId, "audited by the suite");
  assert.equal((await taskClient.getTaskLogs(poll.taskId)).at(-1)?.log, "audited by the suite");

  const tries = attempts(wf, "flaky");
  assert.deepEqual(tries.map((t) => [t.status, t.retryCount]), [["FAILED", 0], ["COMPLETED", 1]]);
  assert.match(tries[0].reasonForIncompletion ?? "", /temporary outage/);
  assert.deepEqual(flakyCalls, [0, 1]);

  const strictFlow = new ConductorWorkflow(executor, unique("ts_non_retryable"), 1)
    .add(simpleTask("validate", strict, {}));
  await strictFlow.register(true);
  const failedId = await strictFlow.startWorkflow({});
  const failed = await waitForStatus(executor, failedId, "FAILED");
  const validate = attempts(failed, "validate");
  assert.equal(validate.length, 1, "no retry after a terminal error");
  assert.equal(validate[0].status, "FAILED_WITH_TERMINAL_ERROR");
  assert.match(validate[0].reasonForIncompletion ?? "", /order is invalid/);
  assert.equal(strictCalls, 1);
  console.log("worker features: ok");
} finally {
  await manager.stopPolling();
}
// The client refreshes its auth token on a timer that keeps node alive: exit explicitly.
process.exit(0);
