package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/conductor-sdk/conductor-go/sdk/model"
	"github.com/conductor-sdk/conductor-go/sdk/workflow"
)

// SUB_WORKFLOW (a child with a JQ transform), and a dynamic fork whose branches a Go
// worker prepares (forkedTasks / forkedTasksInputs, as NewDynamicForkTask wires them),
// each branch a SIMPLE task run by the TaskRunner; the JOIN collects the branches' output.
func TestBuilderSubWorkflowJQAndDynamicFork(t *testing.T) {
	t.Parallel()
	prepare, branch := name("fork_prepare"), name("fork_branch")
	childName, parentName := name("child_wf"), name("parent_wf")
	registerTaskDefs(t, model.TaskDef{Name: prepare}, model.TaskDef{Name: branch})

	child := workflow.NewConductorWorkflow(wfExecutor).Name(childName).Version(1).OwnerEmail("go-sdk@example.com").
		Add(workflow.NewJQTask("plus_one", ".x + 1").Input("x", "${workflow.input.x}")).
		OutputParameters(map[string]interface{}{"y": "${plus_one.output.result}"})
	must(t, "Register child", child.Register(true))

	fork := workflow.NewDynamicForkTask("fan", workflow.NewSimpleTask(prepare, "prep").Input("count", "${workflow.input.count}"))
	parent := workflow.NewConductorWorkflow(wfExecutor).Name(parentName).Version(1).OwnerEmail("go-sdk@example.com").
		Add(workflow.NewSubWorkflowTask("child", childName, 1).Input("x", "${workflow.input.x}")).
		Add(fork).
		OutputParameters(map[string]interface{}{"y": "${child.output.y}", "joined": "${fan_join.output}"})
	must(t, "Register parent", parent.Register(true))

	runner := newRunner(t, prepare, branch)
	must(t, "StartWorker prepare", runner.StartWorker(prepare, func(task *model.Task) (interface{}, error) {
		count := int(task.InputData["count"].(float64))
		tasks := []map[string]interface{}{}
		inputs := map[string]interface{}{}
		for i := 0; i < count; i++ {
			ref := fmt.Sprintf("branch_%d", i)
			tasks = append(tasks, map[string]interface{}{"name": branch, "taskReferenceName": ref, "type": "SIMPLE"})
			inputs[ref] = map[string]interface{}{"i": i}
		}
		return map[string]interface{}{"forkedTasks": tasks, "forkedTasksInputs": inputs}, nil
	}, 1, 50*time.Millisecond))
	must(t, "StartWorker branch", runner.StartWorker(branch, func(task *model.Task) (interface{}, error) {
		return map[string]interface{}{"square": task.InputData["i"].(float64) * task.InputData["i"].(float64)}, nil
	}, 3, 50*time.Millisecond))

	id, err := wfExecutor.StartWorkflow(&model.StartWorkflowRequest{Name: parentName, Version: 1,
		Input: map[string]interface{}{"x": 41, "count": 3}})
	must(t, "StartWorkflow", err)
	wf := waitStatus(t, id, model.CompletedWorkflow)
	if wf.Output["y"] != float64(42) {
		t.Fatalf("child's JQ output through the SUB_WORKFLOW: %v", wf.Output)
	}
	sub := findTask(wf, "child", "COMPLETED")
	if sub == nil || sub.SubWorkflowId == "" {
		t.Fatalf("SUB_WORKFLOW task without a subWorkflowId: %v", statuses(wf))
	}
	childRun := getWorkflow(t, sub.SubWorkflowId)
	if childRun.ParentWorkflowId != id || childRun.Status != model.CompletedWorkflow {
		t.Fatalf("child %s: parent %q status %s", sub.SubWorkflowId, childRun.ParentWorkflowId, childRun.Status)
	}
	joined, ok := wf.Output["joined"].(map[string]interface{})
	if !ok || len(joined) != 3 {
		t.Fatalf("join output %v, want 3 branches", wf.Output["joined"])
	}
	for i := 0; i < 3; i++ {
		out, _ := joined[fmt.Sprintf("branch_%d", i)].(map[string]interface{})
		if out["square"] != float64(i*i) {
			t.Fatalf("branch_%d output %v", i, out)
		}
	}
}
