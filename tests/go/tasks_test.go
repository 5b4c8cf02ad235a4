package e2e

import (
	"net/http"
	"testing"

	"github.com/antihax/optional"
	"github.com/conductor-sdk/conductor-go/sdk/client"
	"github.com/conductor-sdk/conductor-go/sdk/model"
	"github.com/conductor-sdk/conductor-go/sdk/workflow"
)

// The task client by hand, as a worker without the TaskRunner would: queue size, Poll and
// BatchPoll (with a worker id), GetTask, Log and GetTaskLogs, UpdateTask by task id,
// UpdateTaskByRefName, poll data; an empty queue answers 204 and no task.
func TestTaskClientPollUpdateLog(t *testing.T) {
	t.Parallel()
	taskName, wfName := name("manual_task"), name("manual_wf")
	registerTaskDefs(t, model.TaskDef{Name: taskName})
	twoStepWorkflow(t, wfName, taskName)
	ids := startN(t, wfName, 3, nil)

	sizes, _, err := taskClient.Size(ctx, &client.TaskResourceApiSizeOpts{TaskType: optional.NewInterface(taskName)})
	must(t, "Size", err)
	if sizes[taskName] != 3 {
		t.Fatalf("queue size %v, want 3", sizes)
	}

	polled, _, err := taskClient.Poll(ctx, taskName, &client.TaskResourceApiPollOpts{Workerid: optional.NewString("go-manual")})
	must(t, "Poll", err)
	if polled.TaskId == "" || polled.Status != "IN_PROGRESS" || polled.WorkerId != "go-manual" ||
		polled.ReferenceTaskName != "first" || polled.TaskDefName != taskName {
		t.Fatalf("Poll returned %+v", polled)
	}
	batch, _, err := taskClient.BatchPoll(ctx, taskName, &client.TaskResourceApiBatchPollOpts{
		Workerid: optional.NewString("go-manual"), Count: optional.NewInt32(5), Timeout: optional.NewInt32(100)})
	must(t, "BatchPoll", err)
	if len(batch) != 2 {
		t.Fatalf("BatchPoll(count=5) returned %d tasks, want the 2 left", len(batch))
	}
	empty, resp, err := taskClient.BatchPoll(ctx, taskName, &client.TaskResourceApiBatchPollOpts{
		Count: optional.NewInt32(1), Timeout: optional.NewInt32(100)})
	must(t, "BatchPoll of an empty queue", err)
	if len(empty) != 0 || (resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent) {
		t.Fatalf("empty queue: %d tasks, HTTP %d", len(empty), resp.StatusCode)
	}

	_, err = taskClient.Log(ctx, "working on it", polled.TaskId)
	must(t, "Log", err)
	result := model.NewTaskResultFromTask(&polled)
	result.Status = model.CompletedTask
	result.OutputData = map[string]interface{}{"n": 41}
	result.Logs = []model.TaskExecLog{{Log: "done", TaskId: polled.TaskId}}
	_, _, err = taskClient.UpdateTask(ctx, result)
	must(t, "UpdateTask", err)
	logs, _, err := taskClient.GetTaskLogs(ctx, polled.TaskId)
	must(t, "GetTaskLogs", err)
	if len(logs) != 2 || logs[0].Log != "working on it" || logs[1].Log != "done" {
		t.Fatalf("task logs %+v", logs)
	}
	task, _, err := taskClient.GetTask(ctx, polled.TaskId)
	must(t, "GetTask", err)
	if task.Status != "COMPLETED" || task.OutputData["n"] != float64(41) || task.WorkerId == "" {
		t.Fatalf("GetTask after update: %s %v worker %q", task.Status, task.OutputData, task.WorkerId)
	}
	second := waitTask(t, polled.WorkflowInstanceId, "second", model.ScheduledTask)
	if second.InputData["n"] != float64(41) {
		t.Fatalf("second's input %v, want n=41 from first's output", second.InputData)
	}

	// By reference name, on a workflow whose "first" is IN_PROGRESS with a manual worker.
	other := batch[0].WorkflowInstanceId
	_, _, err = taskClient.UpdateTaskByRefName(ctx, map[string]interface{}{"n": 7}, other, "first", "COMPLETED")
	must(t, "UpdateTaskByRefName", err)
	waitTask(t, other, "second", model.ScheduledTask)
	// A failure with a reason by task id fails the workflow (retryCount 0).
	last := batch[1]
	failed := model.NewTaskResultFromTask(&last)
	failed.Status = model.FailedTask
	failed.ReasonForIncompletion = "manual failure"
	_, _, err = taskClient.UpdateTask(ctx, failed)
	must(t, "UpdateTask FAILED", err)
	wf := waitStatus(t, last.WorkflowInstanceId, model.FailedWorkflow)
	if wf.ReasonForIncompletion == "" || findTask(wf, "first", "").ReasonForIncompletion != "manual failure" {
		t.Fatalf("failed workflow: reason %q, tasks %v", wf.ReasonForIncompletion, statuses(wf))
	}

	pollData, _, err := taskClient.GetPollData(ctx, taskName)
	must(t, "GetPollData", err)
	if len(pollData) == 0 || pollData[0].QueueName == "" || pollData[0].LastPollTime == 0 {
		t.Fatalf("poll data %+v", pollData)
	}
	for _, id := range ids {
		if wf := getWorkflow(t, id); wf.Status == model.RunningWorkflow {
			must(t, "Terminate", wfExecutor.Terminate(id, "task client test done"))
		}
	}
}

// A WAIT task completed by a signal on its workflow (SignalWorkflowTaskAsync: POST
// /tasks/{workflowId}/{status}/signal) takes the signal's output.
func TestTaskSignal(t *testing.T) {
	t.Parallel()
	wfName := name("signal_wf")
	wf := workflow.NewConductorWorkflow(wfExecutor).Name(wfName).Version(1).OwnerEmail("go-sdk@example.com").
		Add(workflow.NewWaitTask("gate")).
		OutputParameters(map[string]interface{}{"key": "${gate.output.key}"})
	must(t, "Register", wf.Register(true))
	id, err := wfExecutor.StartWorkflow(&model.StartWorkflowRequest{Name: wfName, Version: 1})
	must(t, "StartWorkflow", err)
	waitTask(t, id, "gate", model.InProgressTask)
	must(t, "SignalWorkflowTaskAsync", wfExecutor.SignalWorkflowTaskAsync(id, model.CompletedTask,
		map[string]interface{}{"key": "opened"}))
	done := waitStatus(t, id, model.CompletedWorkflow)
	if done.Output["key"] != "opened" {
		t.Fatalf("output %v", done.Output)
	}
}

// The synchronous signal (POST /tasks/{workflowId}/{status}/signal/sync) and
// ExecuteWorkflowWithReturnStrategy: BLOCKING_TASK answers the task the workflow waits on,
// TARGET_WORKFLOW the workflow with its tasks.
func TestSyncSignalReturnStrategies(t *testing.T) {
	t.Parallel()
	wfName := name("gates_wf")
	wf := workflow.NewConductorWorkflow(wfExecutor).Name(wfName).Version(1).OwnerEmail("go-sdk@example.com").
		Add(workflow.NewWaitTask("gate1")).Add(workflow.NewWaitTask("gate2")).
		OutputParameters(map[string]interface{}{"first": "${gate1.output.v}", "second": "${gate2.output.v}"})
	must(t, "Register", wf.Register(true))

	started, err := workflowClient.ExecuteWorkflowWithReturnStrategy(ctx,
		model.StartWorkflowRequest{Name: wfName, Version: 1},
		client.ExecuteWorkflowOpts{WaitUntilTaskRef: []string{"gate1"}, WaitForSeconds: 5,
			ReturnStrategy: model.ReturnBlockingTask})
	must(t, "ExecuteWorkflowWithReturnStrategy", err)
	if !started.IsBlockingTask() || started.ReferenceTaskName != "gate1" || started.TaskType != "WAIT" ||
		started.Status != "IN_PROGRESS" || started.TargetWorkflowStatus != model.RunningWorkflow {
		t.Fatalf("BLOCKING_TASK answer: %+v", started)
	}
	id := started.WorkflowId

	signalled, err := taskClient.Signal(ctx, map[string]interface{}{"v": 1}, id, model.CompletedWorkflow)
	must(t, "Signal (TARGET_WORKFLOW)", err)
	if !signalled.IsTargetWorkflow() || signalled.TargetWorkflowId != id || signalled.Status != "RUNNING" {
		t.Fatalf("TARGET_WORKFLOW answer: %+v", signalled)
	}
	run, err := signalled.GetWorkflow()
	must(t, "GetWorkflow of the signal answer", err)
	if got := statuses(run); !equalStrings(got, []string{"gate1:COMPLETED", "gate2:IN_PROGRESS"}) {
		t.Fatalf("workflow in the signal answer: %v", got)
	}

	last, err := taskClient.Signal(ctx, map[string]interface{}{"v": 2}, id, model.CompletedWorkflow,
		client.SignalTaskOpts{ReturnStrategy: model.ReturnTargetWorkflow})
	must(t, "Signal gate2", err)
	if last.Status != "COMPLETED" || last.Output["first"] != float64(1) || last.Output["second"] != float64(2) {
		t.Fatalf("after the second signal: %s %v", last.Status, last.Output)
	}
}
