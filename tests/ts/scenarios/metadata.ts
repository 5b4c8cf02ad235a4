// MetadataClient: task and workflow definitions registered, read, updated and removed.
import assert from "node:assert/strict";
import {
  ConductorWorkflow, OrkesClients, simpleTask, taskDefinition, workflow,
} from "@io-orkes/conductor-javascript";
import { unique } from "../lib/util.js";

const clients = await OrkesClients.from();
const metadata = clients.getMetadataClient();
const executor = clients.getWorkflowClient();

const taskName = unique("ts_meta_task");
await metadata.registerTask(taskDefinition({ name: taskName, retryCount: 2, retryDelaySeconds: 5, ownerEmail: "ts@example.com" }));
const other = unique("ts_meta_other");
await metadata.registerTasks([taskDefinition({ name: other, description: "second" })]);

const stored = await metadata.getTask(taskName);
assert.equal(stored.name, taskName);
assert.equal(stored.retryCount, 2);
assert.equal(stored.retryDelaySeconds, 5);
assert.equal(stored.responseTimeoutSeconds, 600);

await metadata.updateTask({ ...stored, retryCount: 4, description: "updated" });
const updated = await metadata.getTask(taskName);
assert.equal(updated.retryCount, 4);
assert.equal(updated.description, "updated");

const allTasks = await metadata.getAllTaskDefs();
const names = allTasks.map((t) => t.name);
assert.ok(names.includes(taskName) && names.includes(other), "getAllTaskDefs lists both");

// A workflow definition from the plain `workflow()` builder, then version 2 by the
// fluent builder, read back by version and as the latest.
const wfName = unique("ts_meta_wf");
await metadata.registerWorkflowDef({ ...workflow(wfName, [simpleTask("t_ref", taskName, { x: "${workflow.input.x}" })]), version: 1 });
const v1 = await metadata.getWorkflowDef(wfName, 1);
assert.equal(v1.name, wfName);
assert.equal(v1.version, 1);
assert.deepEqual(v1.tasks.map((t) => [t.taskReferenceName, t.type]), [["t_ref", "SIMPLE"]]);
assert.deepEqual(v1.tasks[0].inputParameters, { x: "${workflow.input.x}" });

await new ConductorWorkflow(executor, wfName, 2)
  .description("two tasks")
  .add(simpleTask("a", taskName, {}))
  .add(simpleTask("b", other, {}))
  .register(true);
const latest = await metadata.getWorkflowDef(wfName);
assert.equal(latest.version, 2);
assert.equal(latest.description, "two tasks");
assert.equal(latest.tasks.length, 2);

const allWorkflows = await metadata.getAllWorkflowDefs();
assert.ok(allWorkflows.some((w) => w.name === wfName && w.version === 2));

// Registering an existing version without overwrite is refused.
await assert.rejects(metadata.registerWorkflowDef({ ...v1 }, false));

await metadata.unregisterWorkflow(wfName, 1);
await assert.rejects(metadata.getWorkflowDef(wfName, 1));
assert.equal((await metadata.getWorkflowDef(wfName, 2)).version, 2);

await metadata.unregisterTask(other);
await assert.rejects(metadata.getTask(other));
console.log("metadata: ok");
// The client refreshes its auth token on a timer that keeps node alive: exit explicitly.
process.exit(0);
