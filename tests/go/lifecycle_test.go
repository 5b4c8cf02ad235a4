package e2e

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-sdk/conductor-go/sdk/model"
	"github.com/conductor-sdk/conductor-go/sdk/workflow"
)

// twoStepWorkflow registers first -> second, two SIMPLE tasks of taskName.
func twoStepWorkflow(t *testing.T, wfName, taskName string) {
	t.Helper()
	wf := workflow.NewConductorWorkflow(wfExecutor).Name(wfName).Version(1).OwnerEmail("go-sdk@example.com").
		Restartable(true).
		Add(workflow.NewSimpleTask(taskName, "first").Input("n", "${workflow.input.n}")).
		Add(workflow.NewSimpleTask(taskName, "second").Input("n", "${first.output.n}")).
		OutputParameters(map[string]interface{}{"n": "${second.output.n}"})
	must(t, "Register "+wfName, wf.Register(true))
}

// Pause stops scheduling the next task (the one in progress may finish); Resume goes on.
// Terminate ends the workflow with the reason; Restart runs it again from the start.
func TestLifecyclePauseResumeTerminateRestart(t *testing.T) {
	t.Parallel()
	taskName, wfName := name("life_task"), name("life_wf")
	registerTaskDefs(t, model.TaskDef{Name: taskName})
	twoStepWorkflow(t, wfName, taskName)
	id, err := wfExecutor.StartWorkflow(&model.StartWorkflowRequest{Name: wfName, Version: 1,
		Input: map[string]interface{}{"n": 1}})
	must(t, "StartWorkflow", err)

	must(t, "Pause", wfExecutor.Pause(id))
	waitStatus(t, id, model.PausedWorkflow)
	// Completing "first" while paused does not schedule "second".
	must(t, "UpdateTaskByRefName first", wfExecutor.UpdateTaskByRefName("first", id, model.CompletedTask,
		map[string]interface{}{"n": 2}))
	wf := getWorkflow(t, id)
	if wf.Status != model.PausedWorkflow || !equalStrings(statuses(wf), []string{"first:COMPLETED"}) {
		t.Fatalf("paused workflow: %s %v", wf.Status, statuses(wf))
	}
	must(t, "Resume", wfExecutor.Resume(id))
	waitTask(t, id, "second", model.ScheduledTask)
	if wf := getWorkflow(t, id); wf.Status != model.RunningWorkflow {
		t.Fatalf("resumed workflow is %s", wf.Status)
	}

	must(t, "Terminate", wfExecutor.Terminate(id, "operator says stop"))
	wf = waitStatus(t, id, model.TerminatedWorkflow)
	if wf.ReasonForIncompletion != "operator says stop" {
		t.Fatalf("reason %q", wf.ReasonForIncompletion)
	}
	if second := findTask(wf, "second", ""); second.Status != "CANCELED" {
		t.Fatalf("second after terminate: %s", second.Status)
	}

	must(t, "Restart", wfExecutor.Restart(id, false))
	waitTask(t, id, "first", model.ScheduledTask)
	wf2 := getWorkflow(t, id)
	if wf2.Status != model.RunningWorkflow || !equalStrings(statuses(wf2), []string{"first:SCHEDULED"}) {
		t.Fatalf("restarted workflow: %s %v", wf2.Status, statuses(wf2))
	}
	// Pausing or resuming a workflow that is not in that state is refused.
	if err := wfExecutor.Resume(id); err == nil {
		t.Fatalf("Resume of a RUNNING workflow succeeded")
	}
	must(t, "Terminate restarted", wfExecutor.Terminate(id, "done"))
	waitStatus(t, id, model.TerminatedWorkflow)
}

// Retry resumes a FAILED workflow from its failed task; Rerun from a task id runs the
// workflow again from that task with new task input; SkipTasksFromWorkflow marks a task
// that is not scheduled yet SKIPPED with the given output.
func TestLifecycleRetryRerunSkip(t *testing.T) {
	t.Parallel()
	taskName, wfName := name("retry_task"), name("retry_wf")
	registerTaskDefs(t, model.TaskDef{Name: taskName}) // retryCount 0: the first failure fails the workflow
	twoStepWorkflow(t, wfName, taskName)

	var failSecond atomic.Bool
	failSecond.Store(true)
	runner := newRunner(t, taskName)
	must(t, "StartWorker", runner.StartWorker(taskName, func(task *model.Task) (interface{}, error) {
		if task.ReferenceTaskName == "second" && failSecond.Load() {
			return nil, errors.New("second is down")
		}
		n := task.InputData["n"].(float64)
		if v, ok := task.InputData["override"]; ok {
			n = v.(float64)
		}
		return map[string]interface{}{"n": n + 1}, nil
	}, 1, 50*time.Millisecond))

	id, err := wfExecutor.StartWorkflow(&model.StartWorkflowRequest{Name: wfName, Version: 1,
		Input: map[string]interface{}{"n": 1}})
	must(t, "StartWorkflow", err)
	wf := waitStatus(t, id, model.FailedWorkflow)
	if !equalStrings(statuses(wf), []string{"first:COMPLETED", "second:FAILED"}) ||
		wf.ReasonForIncompletion == "" {
		t.Fatalf("failed workflow: %v reason %q", statuses(wf), wf.ReasonForIncompletion)
	}

	failSecond.Store(false)
	must(t, "Retry", wfExecutor.Retry(id, false))
	wf = waitStatus(t, id, model.CompletedWorkflow)
	if !equalStrings(statuses(wf), []string{"first:COMPLETED", "second:FAILED", "second:COMPLETED"}) ||
		wf.Output["n"] != float64(3) {
		t.Fatalf("retried workflow: %v output %v", statuses(wf), wf.Output)
	}

	second := findTask(wf, "second", "COMPLETED")
	rerunID, err := wfExecutor.ReRun(id, model.RerunWorkflowRequest{ReRunFromWorkflowId: id,
		ReRunFromTaskId: second.TaskId, TaskInput: map[string]interface{}{"n": 2, "override": 100}})
	must(t, "ReRun", err)
	if rerunID != id {
		t.Fatalf("ReRun returned %q, want the same workflow id %q", rerunID, id)
	}
	wf = waitStatus(t, id, model.CompletedWorkflow)
	if wf.Output["n"] != float64(101) {
		t.Fatalf("rerun from second with override 100: output %v, tasks %v", wf.Output, statuses(wf))
	}
	if first := findTask(wf, "first", ""); first.TaskId != findTask(getWorkflow(t, id), "first", "").TaskId {
		t.Fatalf("rerun from second re-ran first")
	}

	// Skip: "second" is not scheduled while "first" waits for its worker (none for this type).
	skipTask, skipWf := name("skip_task"), name("skip_wf")
	registerTaskDefs(t, model.TaskDef{Name: skipTask})
	twoStepWorkflow(t, skipWf, skipTask)
	id, err = wfExecutor.StartWorkflow(&model.StartWorkflowRequest{Name: skipWf, Version: 1,
		Input: map[string]interface{}{"n": 1}})
	must(t, "StartWorkflow skip_wf", err)
	must(t, "SkipTasksFromWorkflow", wfExecutor.SkipTasksFromWorkflow(id, "second",
		model.SkipTaskRequest{TaskOutput: map[string]interface{}{"n": "skipped"}}))
	must(t, "UpdateTaskByRefName first", wfExecutor.UpdateTaskByRefName("first", id, model.CompletedTask,
		map[string]interface{}{"n": 5}))
	wf = waitStatus(t, id, model.CompletedWorkflow)
	if !equalStrings(statuses(wf), []string{"first:COMPLETED", "second:SKIPPED"}) {
		t.Fatalf("skip: tasks %v", statuses(wf))
	}
	if wf.Output["n"] != "skipped" {
		t.Fatalf("skip: output %v", wf.Output)
	}
}
