// testWorkflow: a definition evaluated with mocked task outputs, nothing stored, no worker.
import assert from "node:assert/strict";
import {
  ConductorWorkflow, OrkesClients, simpleTask, switchTask,
} from "@io-orkes/conductor-javascript";
import { byRef, unique } from "../lib/util.js";

const clients = await OrkesClients.from();
const executor = clients.getWorkflowClient();

const name = unique("ts_test_wf");
const def = new ConductorWorkflow(executor, name, 1)
  .add(simpleTask("score", "ts_credit_score", { customer: "${workflow.input.customer}" }))
  .add(switchTask("route", "${score.output.band}", {
    high: [simpleTask("approve", "ts_approve", { customer: "${workflow.input.customer}" })],
  }, [simpleTask("review", "ts_manual_review", {})]))
  .outputParameters({ band: "${score.output.band}", decision: "${approve.output.decision}" })
  .toWorkflowDef();

const run = await executor.testWorkflow({
  name,
  version: 1,
  workflowDef: def,
  input: { customer: "c-1" },
  taskRefToMockOutput: {
    score: [{ status: "COMPLETED", output: { band: "high" } }],
    approve: [{ status: "COMPLETED", output: { decision: "yes" } }],
  },
});
assert.equal(run.status, "COMPLETED");
assert.deepEqual(run.output, { band: "high", decision: "yes" });
const tasks = byRef(run);
assert.deepEqual(tasks.score.inputData, { customer: "c-1" });
assert.equal(tasks.route.status, "COMPLETED");
assert.equal(tasks.approve.status, "COMPLETED");
assert.ok(!tasks.review, "the default case did not run");

// Another band takes the default case.
const low = await executor.testWorkflow({
  name, version: 1, workflowDef: def, input: { customer: "c-2" },
  taskRefToMockOutput: { score: [{ status: "COMPLETED", output: { band: "low" } }], review: [{ status: "COMPLETED", output: {} }] },
});
assert.equal(low.status, "COMPLETED");
assert.deepEqual(Object.keys(byRef(low)).sort(), ["review", "route", "score"]);
console.log("testWorkflow: ok");
// The client refreshes its auth token on a timer that keeps node alive: exit explicitly.
process.exit(0);
