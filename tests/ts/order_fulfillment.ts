// Order fulfillment with the official TypeScript SDK: three workers (fetch the order,
// charge it, ship it) chained in a workflow built in code, run once asynchronously and
// once synchronously.  CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api npx tsx order_fulfillment.ts
import {
  ConductorWorkflow,
  OrkesClients,
  TaskManager,
  simpleTask,
  taskDefinition,
  type ConductorWorker,
} from "@io-orkes/conductor-javascript";

const workers: ConductorWorker[] = [
  {
    taskDefName: "fetch_order",
    execute: async ({ inputData }) => ({
      status: "COMPLETED",
      outputData: { order_id: inputData?.order_id, amount: 99.99, item: "Widget" },
    }),
  },
  {
    taskDefName: "process_payment",
    execute: async () => ({
      status: "COMPLETED",
      outputData: { transaction_id: "txn_abc123", status: "charged" },
    }),
  },
  {
    taskDefName: "ship_order",
    execute: async () => ({
      status: "COMPLETED",
      outputData: { tracking: "TRACK-456", carrier: "FedEx" },
    }),
  },
];

const clients = await OrkesClients.from(); // reads CONDUCTOR_SERVER_URL
const executor = clients.getWorkflowClient();
const metadata = clients.getMetadataClient();

// Register only what the server lacks: definitions already there (`make run` loads
// these) are left as they are.
const missing = (lookup: () => Promise<unknown>) => lookup().then(() => false, () => true);
const newTasks = [];
for (const { taskDefName } of workers) {
  if (await missing(() => metadata.getTask(taskDefName))) {
    newTasks.push(taskDefinition({ name: taskDefName, retryDelaySeconds: 1 }));
  }
}
if (newTasks.length > 0) await metadata.registerTasks(newTasks);
const workflow = new ConductorWorkflow(executor, "order_fulfillment", 1)
  .add(simpleTask("fetch", "fetch_order", { order_id: "${workflow.input.order_id}" }))
  .add(simpleTask("pay", "process_payment", {
    order_id: "${workflow.input.order_id}",
    amount: "${fetch.output.amount}",
  }))
  .add(simpleTask("ship", "ship_order", {
    order_id: "${workflow.input.order_id}",
    transaction_id: "${pay.output.transaction_id}",
  }))
  .outputParameters({
    tracking: "${ship.output.tracking}",
    transaction_id: "${pay.output.transaction_id}",
  });
if (await missing(() => metadata.getWorkflowDef("order_fulfillment", 1))) await workflow.register(false);

const manager = new TaskManager(clients.getClient(), workers, { options: { pollInterval: 100 } });
manager.startPolling();
let ok = false;
try {
  // Asynchronous: start, get the id at once, follow the execution.
  const workflowId = await workflow.startWorkflow({ order_id: "ORD-123" });
  console.log(`Started workflow: ${workflowId}`);
  let started = await executor.getWorkflow(workflowId, false);
  for (let i = 0; i < 300 && started.status === "RUNNING"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    started = await executor.getWorkflow(workflowId, false);
  }
  console.log(`Status: ${started.status}`, started.output);

  // Synchronous: start and wait (up to 10 s) for the result.
  const run = await workflow.execute({ order_id: "ORD-789" });
  console.log(`Status: ${run.status}`, run.output);
  ok = started.status === "COMPLETED" && run.status === "COMPLETED";
} finally {
  await manager.stopPolling();
}
// With an access key the client refreshes its token on a timer: exit explicitly.
process.exit(ok ? 0 : 1);
