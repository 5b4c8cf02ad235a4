// The TypeScript SDK workers of the scale-out test (tests/crash/test_scale_out.py): a
// TaskManager with one worker per task type of the chain (crash_a, crash_b, crash_c),
// configured as users configure it, from CONDUCTOR_SERVER_URL, CONDUCTOR_AUTH_KEY and
// CONDUCTOR_AUTH_SECRET. Every task a poll hands to a worker is recorded, before the
// work, as one JSON line {taskId, workflowId, ref, worker, pid, at (epoch ms)} in
// $SCALE_LEDGER_DIR/<label>-<pid>.jsonl (label: SCALE_WORKER_LABEL). The work is the
// pure function of tests/crash/harness.py's work(); the output carries the taskId it
// was computed for (delivery). SIGTERM stops polling and exits 0.
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { OrkesClients, TaskManager, type ConductorWorker } from "@io-orkes/conductor-javascript";

const label = process.env.SCALE_WORKER_LABEL ?? "ts";
const ledger = join(process.env.SCALE_LEDGER_DIR ?? ".", `${label}-${process.pid}.jsonl`);
const work: Record<string, (input: Record<string, unknown>) => number> = {
  crash_a: (input) => Number(input.n) * 3,
  crash_b: (input) => Number(input.fromA) + 1,
  crash_c: (input) => Number(input.calc) + 5,
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const clients = await OrkesClients.from();
const workers: ConductorWorker[] = Object.entries(work).map(([name, compute]) => ({
  taskDefName: name,
  execute: async (task) => {
    appendFileSync(ledger, JSON.stringify({
      taskId: task.taskId, workflowId: task.workflowInstanceId, ref: task.referenceTaskName,
      worker: `${label}-${name}`, pid: process.pid, at: Date.now(),
    }) + "\n");
    const value = compute(task.inputData ?? {});
    await sleep(5 + Math.random() * 45); // the work takes a moment: kills land mid-way
    return { status: "COMPLETED", outputData: { value, delivery: task.taskId } };
  },
}));
const manager = new TaskManager(clients.getClient(), workers, {
  // batchPollingTimeout: the server holds an empty poll 1 s (fewer requests on a busy machine)
  options: { workerID: label, pollInterval: 100, concurrency: 2, batchPollingTimeout: 1000 },
});
manager.startPolling();
console.log(`scale-out worker ${label}: polling ${Object.keys(work).join(", ")}`);
process.on("SIGTERM", () => {
  manager.stopPolling().finally(() => process.exit(0));
});
