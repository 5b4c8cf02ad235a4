package e2e

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-sdk/conductor-go/sdk/model"
	"github.com/conductor-sdk/conductor-go/sdk/workflow"
)

// oneTaskWorkflow registers a workflow of one SIMPLE task of taskName (reference "work")
// whose output is the task's output.
func oneTaskWorkflow(t *testing.T, wfName, taskName string) {
	t.Helper()
	wf := workflow.NewConductorWorkflow(wfExecutor).Name(wfName).Version(1).OwnerEmail("go-sdk@example.com").
		Add(workflow.NewSimpleTask(taskName, "work").Input("n", "${workflow.input.n}")).
		OutputParameters(map[string]interface{}{"result": "${work.output.result}", "by": "${work.output.by}"})
	must(t, "Register "+wfName, wf.Register(true))
}

func startN(t *testing.T, wfName string, n int, taskToDomain map[string]string) []string {
	t.Helper()
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		id, err := wfExecutor.StartWorkflow(&model.StartWorkflowRequest{Name: wfName, Version: 1,
			Input: map[string]interface{}{"n": i}, TaskToDomain: taskToDomain})
		must(t, "StartWorkflow", err)
		ids = append(ids, id)
	}
	return ids
}

// A TaskRunner worker with batch size 3: queued tasks are polled several at a time (one
// batch poll returns up to 3), never more than 3 run at once, and every workflow completes
// with the worker's output.
func TestWorkerBatchSizeAndPollInterval(t *testing.T) {
	t.Parallel()
	taskName, wfName := name("batch_task"), name("batch_wf")
	registerTaskDefs(t, model.TaskDef{Name: taskName})
	oneTaskWorkflow(t, wfName, taskName)
	ids := startN(t, wfName, 6, nil)

	// The first three executions wait (up to 20 s) until three run at once: they do when
	// one batch poll handed out three tasks; with one task a poll they would not, and
	// maxRunning would stay 1.
	var running, maxRunning, executed int32
	var mu sync.Mutex
	runner := newRunner(t, taskName)
	must(t, "StartWorker", runner.StartWorker(taskName, func(task *model.Task) (interface{}, error) {
		now := atomic.AddInt32(&running, 1)
		mu.Lock()
		if now > maxRunning {
			maxRunning = now
		}
		mu.Unlock()
		defer atomic.AddInt32(&running, -1)
		if atomic.AddInt32(&executed, 1) <= 3 {
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
				mu.Lock()
				reached := maxRunning >= 3
				mu.Unlock()
				if reached {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		n := task.InputData["n"].(float64)
		return map[string]interface{}{"result": n * 10, "by": task.WorkerId}, nil
	}, 3, 50*time.Millisecond))
	if got := runner.GetBatchSizeForTask(taskName); got != 3 {
		t.Fatalf("GetBatchSizeForTask = %d, want 3", got)
	}
	if got, _ := runner.GetPollIntervalForTask(taskName); got != 50*time.Millisecond {
		t.Fatalf("GetPollIntervalForTask = %s, want 50ms", got)
	}

	for i, id := range ids {
		wf := waitStatus(t, id, model.CompletedWorkflow)
		if wf.Output["result"] != float64(i*10) {
			t.Fatalf("workflow %d output %v, want result %d", i, wf.Output, i*10)
		}
		task := findTask(wf, "work", "COMPLETED")
		if task == nil || task.WorkerId == "" || task.PollCount < 1 {
			t.Fatalf("task not completed by a polling worker: %+v", task)
		}
	}
	if executed != 6 {
		t.Fatalf("worker executed %d tasks, want 6", executed)
	}
	if maxRunning != 3 {
		t.Fatalf("at most %d tasks ran at once, want 3 (batch size 3, 6 tasks queued)", maxRunning)
	}
}

// Task domains: with taskToDomain the task goes to the domain's queue, so only the worker
// started with StartWorkerWithDomain gets it; a workflow without a mapping goes to the
// worker without a domain.
func TestWorkerDomain(t *testing.T) {
	t.Parallel()
	taskName, wfName := name("domain_task"), name("domain_wf")
	domain := runID + "_blue"
	registerTaskDefs(t, model.TaskDef{Name: taskName})
	oneTaskWorkflow(t, wfName, taskName)

	runner := newRunner(t, taskName)
	must(t, "StartWorkerWithDomain", runner.StartWorkerWithDomain(taskName, func(task *model.Task) (interface{}, error) {
		return map[string]interface{}{"result": "domain:" + task.Domain, "by": "blue"}, nil
	}, 1, 50*time.Millisecond, domain))
	plain := newRunner(t, taskName)
	must(t, "StartWorker", plain.StartWorker(taskName, func(task *model.Task) (interface{}, error) {
		return map[string]interface{}{"result": "no domain", "by": "plain"}, nil
	}, 1, 50*time.Millisecond))

	inDomain := startN(t, wfName, 1, map[string]string{taskName: domain})[0]
	noDomain := startN(t, wfName, 1, nil)[0]
	wf := waitStatus(t, inDomain, model.CompletedWorkflow)
	if wf.Output["by"] != "blue" || wf.Output["result"] != "domain:"+domain {
		t.Fatalf("task with domain %s ran as %v", domain, wf.Output)
	}
	if task := findTask(wf, "work", ""); task.Domain != domain {
		t.Fatalf("task domain %q, want %q", task.Domain, domain)
	}
	if wf.TaskToDomain[taskName] != domain {
		t.Fatalf("workflow taskToDomain %v", wf.TaskToDomain)
	}
	wf = waitStatus(t, noDomain, model.CompletedWorkflow)
	if wf.Output["by"] != "plain" {
		t.Fatalf("task without domain ran as %v", wf.Output)
	}
}

// A worker error is a FAILED task that the TaskDef's retryCount retries; the retry
// completes the workflow. A NonRetryableError is FAILED_WITH_TERMINAL_ERROR: no retry, the
// workflow fails with the error as its reason.
func TestWorkerErrorsAndRetries(t *testing.T) {
	t.Parallel()
	flaky, terminal := name("flaky_task"), name("terminal_task")
	// retryDelaySeconds 0 would be left out of the JSON (omitempty), which means
	// Conductor's default of 60 s: 1 s it is.
	registerTaskDefs(t,
		model.TaskDef{Name: flaky, RetryCount: 2, RetryLogic: "FIXED", RetryDelaySeconds: 1},
		model.TaskDef{Name: terminal, RetryCount: 3, RetryLogic: "FIXED", RetryDelaySeconds: 1})
	oneTaskWorkflow(t, name("flaky_wf"), flaky)
	oneTaskWorkflow(t, name("terminal_wf"), terminal)

	var attempts int32
	runner := newRunner(t, flaky, terminal)
	must(t, "StartWorker flaky", runner.StartWorker(flaky, func(task *model.Task) (interface{}, error) {
		if atomic.AddInt32(&attempts, 1) == 1 {
			return nil, errors.New("first attempt fails")
		}
		return map[string]interface{}{"result": fmt.Sprintf("attempt %d", task.RetryCount)}, nil
	}, 1, 50*time.Millisecond))
	must(t, "StartWorker terminal", runner.StartWorker(terminal, func(task *model.Task) (interface{}, error) {
		return nil, model.NewNonRetryableError(errors.New("card declined"))
	}, 1, 50*time.Millisecond))

	id := startN(t, name("flaky_wf"), 1, nil)[0]
	wf := waitStatus(t, id, model.CompletedWorkflow)
	if got := statuses(wf); !equalStrings(got, []string{"work:FAILED", "work:COMPLETED"}) {
		t.Fatalf("tasks %v, want a FAILED attempt and a COMPLETED retry", got)
	}
	if wf.Tasks[0].ReasonForIncompletion != "first attempt fails" || wf.Tasks[1].RetryCount != 1 ||
		wf.Tasks[1].RetriedTaskId != "" && wf.Tasks[1].RetriedTaskId == wf.Tasks[1].TaskId {
		t.Fatalf("retry bookkeeping: %+v / %+v", wf.Tasks[0], wf.Tasks[1])
	}
	if wf.Output["result"] != "attempt 1" {
		t.Fatalf("output %v", wf.Output)
	}

	id = startN(t, name("terminal_wf"), 1, nil)[0]
	wf = waitStatus(t, id, model.FailedWorkflow)
	if got := statuses(wf); !equalStrings(got, []string{"work:FAILED_WITH_TERMINAL_ERROR"}) {
		t.Fatalf("tasks %v, want one FAILED_WITH_TERMINAL_ERROR and no retry", got)
	}
	if wf.Tasks[0].ReasonForIncompletion != "card declined" {
		t.Fatalf("task reason %q", wf.Tasks[0].ReasonForIncompletion)
	}
}

// A worker that returns a *model.TaskResult: IN_PROGRESS with callbackAfterSeconds and logs
// first (the task comes back to a poll after the callback), then COMPLETED; the logs are
// the task's execution logs.
func TestWorkerTaskResultInProgressAndLogs(t *testing.T) {
	t.Parallel()
	taskName, wfName := name("progress_task"), name("progress_wf")
	registerTaskDefs(t, model.TaskDef{Name: taskName})
	oneTaskWorkflow(t, wfName, taskName)
	id := startN(t, wfName, 1, nil)[0]

	var calls int32
	runner := newRunner(t, taskName)
	must(t, "StartWorker", runner.StartWorker(taskName, func(task *model.Task) (interface{}, error) {
		result := model.NewTaskResultFromTask(task)
		call := atomic.AddInt32(&calls, 1)
		result.Logs = []model.TaskExecLog{{Log: fmt.Sprintf("call %d", call), TaskId: task.TaskId,
			CreatedTime: time.Now().UnixMilli()}}
		if call == 1 {
			result.Status = model.InProgressTask
			result.CallbackAfterSeconds = 1
			result.OutputData = map[string]interface{}{"progress": 50}
			return result, nil
		}
		result.Status = model.CompletedTask
		result.OutputData = map[string]interface{}{"result": "done", "progress": 100,
			"seen": task.OutputData["progress"]}
		return result, nil
	}, 1, 50*time.Millisecond))

	wf := waitStatus(t, id, model.CompletedWorkflow)
	task := findTask(wf, "work", "COMPLETED")
	if calls != 2 || task.PollCount < 2 {
		t.Fatalf("worker called %d times, pollCount %d; want 2 (IN_PROGRESS then COMPLETED)", calls, task.PollCount)
	}
	if task.OutputData["result"] != "done" || task.OutputData["seen"] != float64(50) {
		t.Fatalf("output %v: the second poll must see the first result's output", task.OutputData)
	}
	logs, _, err := taskClient.GetTaskLogs(ctx, task.TaskId)
	must(t, "GetTaskLogs", err)
	if len(logs) != 2 || logs[0].Log != "call 1" || logs[1].Log != "call 2" {
		t.Fatalf("task logs %+v", logs)
	}
}
