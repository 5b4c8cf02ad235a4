package e2e

import (
	"testing"
	"time"

	"github.com/conductor-sdk/conductor-go/sdk/model"
	"github.com/conductor-sdk/conductor-go/sdk/workflow"
	"github.com/conductor-sdk/conductor-go/sdk/workflow/executor"
)

// The builder's system tasks in one workflow run synchronously with ExecuteWorkflow:
// INLINE, SET_VARIABLE, SWITCH (value-param, a case and the default), FORK_JOIN with a JOIN
// and DO_WHILE (three iterations); the WorkflowRun carries the output, variables and tasks.
func TestExecuteWorkflowSystemTasks(t *testing.T) {
	t.Parallel()
	wfName := name("system_wf")
	double := workflow.NewInlineTask("double", "(function(){ return $.x * 2; })()").Input("x", "${workflow.input.x}")
	setVar := workflow.NewSetVariableTask("remember").Input("doubled", "${double.output.result}")
	bigOrSmall := workflow.NewSwitchTask("size", "${workflow.input.size}").
		SwitchCase("big", workflow.NewInlineTask("say_big", "(function(){ return 'big'; })()")).
		DefaultCase(workflow.NewInlineTask("say_other", "(function(){ return 'other'; })()"))
	fork := workflow.NewForkTask("fork",
		[]workflow.TaskInterface{workflow.NewInlineTask("left", "(function(){ return 'L'; })()")},
		[]workflow.TaskInterface{workflow.NewInlineTask("right", "(function(){ return 'R'; })()")})
	// NewLoopTask(ref, 3, ...) of v1.10.1 writes its condition with the operands swapped
	// ($.loop_count['iteration'] < $.loop), false at once on Conductor as here: the
	// condition is written out.
	loop := workflow.NewDoWhileTask("loop", "if ($.loop['iteration'] < 3) { true; } else { false; }",
		workflow.NewInlineTask("count", "(function(){ return $.i; })()").Input("i", "${loop.output.iteration}"))
	wf := workflow.NewConductorWorkflow(wfExecutor).Name(wfName).Version(1).OwnerEmail("go-sdk@example.com").
		Add(double).Add(setVar).Add(bigOrSmall).Add(fork).Add(loop).
		OutputParameters(map[string]interface{}{
			"doubled": "${double.output.result}", "big": "${say_big.output.result}",
			"other": "${say_other.output.result}", "left": "${left.output.result}",
			"right": "${right.output.result}", "iterations": "${loop.output.iteration}",
			"var": "${workflow.variables.doubled}",
		})
	must(t, "Register", wf.Register(true))

	run, err := wfExecutor.ExecuteWorkflow(&model.StartWorkflowRequest{Name: wfName, Version: 1,
		Input: map[string]interface{}{"x": 21, "size": "big"}}, "")
	must(t, "ExecuteWorkflow", err)
	if run.Status != model.CompletedWorkflow || run.WorkflowId == "" {
		t.Fatalf("ExecuteWorkflow returned status %q id %q", run.Status, run.WorkflowId)
	}
	want := map[string]interface{}{"doubled": float64(42), "big": "big", "left": "L", "right": "R",
		"iterations": float64(3), "var": float64(42)}
	for k, v := range want {
		if run.Output[k] != v {
			t.Fatalf("output[%s] = %v, want %v (output %v)", k, run.Output[k], v, run.Output)
		}
	}
	if run.Output["other"] != nil {
		t.Fatalf("the default case ran: %v", run.Output)
	}
	if run.Variables["doubled"] != float64(42) {
		t.Fatalf("variables %v", run.Variables)
	}
	full := getWorkflow(t, run.WorkflowId)
	types := map[string]bool{}
	for _, task := range full.Tasks {
		types[task.TaskType] = true
		if task.Status != "COMPLETED" {
			t.Fatalf("task %s is %s", task.ReferenceTaskName, task.Status)
		}
	}
	for _, tt := range []string{"INLINE", "SET_VARIABLE", "SWITCH", "FORK", "JOIN", "DO_WHILE"} {
		if !types[tt] {
			t.Fatalf("no %s task in %v", tt, statuses(full))
		}
	}

	// The other case of the SWITCH; a TERMINATE ends a workflow with its status and reason.
	run, err = wfExecutor.ExecuteWorkflow(&model.StartWorkflowRequest{Name: wfName, Version: 1,
		Input: map[string]interface{}{"x": 1, "size": "small"}}, "")
	must(t, "ExecuteWorkflow small", err)
	if run.Output["other"] != "other" || run.Output["big"] != nil {
		t.Fatalf("small: output %v", run.Output)
	}

	stop := workflow.NewConductorWorkflow(wfExecutor).Name(name("terminate_wf")).Version(1).
		OwnerEmail("go-sdk@example.com").
		Add(workflow.NewTerminateTask("stop", model.FailedWorkflow, "stopped by TERMINATE")).
		Add(workflow.NewInlineTask("never", "(function(){ return 1; })()"))
	must(t, "Register terminate_wf", stop.Register(true))
	run, err = wfExecutor.ExecuteWorkflow(&model.StartWorkflowRequest{Name: name("terminate_wf"), Version: 1}, "")
	must(t, "ExecuteWorkflow terminate_wf", err)
	if run.Status != model.FailedWorkflow {
		t.Fatalf("TERMINATE workflow ended %s", run.Status)
	}
	full = getWorkflow(t, run.WorkflowId)
	if full.ReasonForIncompletion != "stopped by TERMINATE" || findTask(full, "never", "") != nil {
		t.Fatalf("TERMINATE: reason %q, tasks %v", full.ReasonForIncompletion, statuses(full))
	}
}

// StartWorkflow returns at once; GetWorkflow with and without tasks, GetWorkflowStatus,
// GetByCorrelationIds, MonitorExecution and StartWorkflows (bulk with monitoring) follow it.
func TestExecutorStartGetAndMonitor(t *testing.T) {
	t.Parallel()
	taskName, wfName := name("monitor_task"), name("monitor_wf")
	registerTaskDefs(t, model.TaskDef{Name: taskName})
	oneTaskWorkflow(t, wfName, taskName)
	correlation := runID + "-order-7"

	id, err := wfExecutor.StartWorkflow(&model.StartWorkflowRequest{Name: wfName, Version: 1,
		CorrelationId: correlation, Input: map[string]interface{}{"n": 7}})
	must(t, "StartWorkflow", err)
	wf, err := wfExecutor.GetWorkflow(id, false)
	must(t, "GetWorkflow", err)
	if wf.Status != model.RunningWorkflow || len(wf.Tasks) != 0 || wf.CorrelationId != correlation ||
		wf.WorkflowName != wfName || wf.Input["n"] != float64(7) {
		t.Fatalf("GetWorkflow(includeTasks=false): %s tasks=%d corr=%q name=%q input=%v",
			wf.Status, len(wf.Tasks), wf.CorrelationId, wf.WorkflowName, wf.Input)
	}
	wf = getWorkflow(t, id)
	if got := statuses(wf); !equalStrings(got, []string{"work:SCHEDULED"}) {
		t.Fatalf("tasks %v, want work:SCHEDULED", got)
	}
	byCorrelation, err := wfExecutor.GetByCorrelationIds(wfName, true, false, correlation)
	must(t, "GetByCorrelationIds", err)
	if list := byCorrelation[correlation]; len(list) != 1 || list[0].WorkflowId != id {
		t.Fatalf("GetByCorrelationIds: %v", byCorrelation)
	}

	channel, err := wfExecutor.MonitorExecution(id)
	must(t, "MonitorExecution", err)
	runner := newRunner(t, taskName)
	must(t, "StartWorker", runner.StartWorker(taskName, func(task *model.Task) (interface{}, error) {
		return map[string]interface{}{"result": task.InputData["n"], "by": "go"}, nil
	}, 2, 50*time.Millisecond))
	done, err := executor.WaitForWorkflowCompletionUntilTimeout(channel, waitTimeout)
	must(t, "WaitForWorkflowCompletionUntilTimeout", err)
	if done.Status != model.CompletedWorkflow || done.Output["result"] != float64(7) {
		t.Fatalf("monitored run: %s %v", done.Status, done.Output)
	}
	state, err := wfExecutor.GetWorkflowStatus(id, true, false)
	must(t, "GetWorkflowStatus", err)
	if state.Status != "COMPLETED" || state.Output["result"] != float64(7) {
		t.Fatalf("GetWorkflowStatus: %+v", state)
	}

	running := wfExecutor.StartWorkflows(true,
		&model.StartWorkflowRequest{Name: wfName, Version: 1, Input: map[string]interface{}{"n": 1}},
		&model.StartWorkflowRequest{Name: wfName, Version: 1, Input: map[string]interface{}{"n": 2}})
	wfExecutor.WaitForRunningWorkflowsUntilTimeout(waitTimeout, running...)
	for _, r := range running {
		if r.Err != nil {
			t.Fatalf("StartWorkflows: %v", r.Err)
		}
		if wf := waitStatus(t, r.WorkflowId, model.CompletedWorkflow); wf.Output["by"] != "go" {
			t.Fatalf("bulk-started workflow output %v", wf.Output)
		}
	}
}

// ExecuteWorkflow with waitUntilTask returns when that task is reached (a WAIT here), with
// the workflow still RUNNING; signalling the WAIT task completes it.
func TestExecuteWorkflowUntilTaskAndSignal(t *testing.T) {
	t.Parallel()
	wfName := name("wait_wf")
	wf := workflow.NewConductorWorkflow(wfExecutor).Name(wfName).Version(1).OwnerEmail("go-sdk@example.com").
		Add(workflow.NewInlineTask("before", "(function(){ return 'b'; })()")).
		Add(workflow.NewWaitTask("approval")).
		OutputParameters(map[string]interface{}{"approved": "${approval.output.approved}"})
	must(t, "Register", wf.Register(true))

	run, err := wfExecutor.ExecuteWorkflow(&model.StartWorkflowRequest{Name: wfName, Version: 1}, "approval")
	must(t, "ExecuteWorkflow until approval", err)
	if run.Status != model.RunningWorkflow {
		t.Fatalf("ExecuteWorkflow(waitUntilTask=approval) returned %s", run.Status)
	}
	waitTask(t, run.WorkflowId, "approval", model.InProgressTask)
	must(t, "UpdateTaskByRefName", wfExecutor.UpdateTaskByRefName("approval", run.WorkflowId,
		model.CompletedTask, map[string]interface{}{"approved": true}))
	done := waitStatus(t, run.WorkflowId, model.CompletedWorkflow)
	if done.Output["approved"] != true {
		t.Fatalf("output %v", done.Output)
	}
}
