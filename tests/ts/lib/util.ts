// Helpers the scenarios share: unique names, bounded waits (never a fixed sleep).
import { randomUUID } from "node:crypto";
import type { Workflow, WorkflowExecutor } from "@io-orkes/conductor-javascript";

/** A name no other scenario (or run) uses. */
export const unique = (prefix: string): string => `${prefix}_${randomUUID().slice(0, 8)}`;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Poll ``getWorkflow(id, true)`` every 100 ms until ``accept`` holds; throws with the
 * last state after ``timeoutMs``. */
export async function waitFor(
  executor: WorkflowExecutor,
  workflowId: string,
  accept: (wf: Workflow) => boolean,
  what = "the expected state",
  timeoutMs = 60_000,
): Promise<Workflow> {
  const deadline = Date.now() + timeoutMs;
  let last: Workflow | undefined;
  while (Date.now() < deadline) {
    last = await executor.getWorkflow(workflowId, true);
    if (accept(last)) return last;
    await sleep(100);
  }
  throw new Error(`workflow ${workflowId} did not reach ${what} in ${timeoutMs} ms; last:\n` +
    JSON.stringify(last, null, 1).slice(0, 6000));
}

export const waitForStatus = (executor: WorkflowExecutor, id: string, status: string, timeoutMs?: number) =>
  waitFor(executor, id, (wf) => wf.status === status, `status ${status}`, timeoutMs);

/** The tasks of a workflow by reference name (last attempt wins). */
export function byRef(wf: { tasks?: Array<{ referenceTaskName?: string }> }): Record<string, any> {
  const out: Record<string, any> = {};
  for (const task of wf.tasks ?? []) out[task.referenceTaskName ?? ""] = task;
  return out;
}

/** Every attempt of one reference, in order. */
export const attempts = (wf: Workflow, ref: string) =>
  (wf.tasks ?? []).filter((t) => t.referenceTaskName === ref);
