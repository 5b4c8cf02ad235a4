package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/antihax/optional"
	"github.com/conductor-sdk/conductor-go/sdk/client"
	"github.com/conductor-sdk/conductor-go/sdk/model"
	"github.com/conductor-sdk/conductor-go/sdk/workflow"
)

// TaskDefs through the metadata client: register, read back, update, list, unregister.
func TestMetadataTaskDefs(t *testing.T) {
	t.Parallel()
	taskName := name("meta_task")
	registerTaskDefs(t, model.TaskDef{Name: taskName, Description: "first", RetryCount: 2,
		RetryLogic: "FIXED", RetryDelaySeconds: 1, InputKeys: []string{"a"}})

	def, _, err := metadataClient.GetTaskDef(ctx, taskName)
	must(t, "GetTaskDef", err)
	if def.Name != taskName || def.RetryCount != 2 || def.RetryLogic != "FIXED" || def.Description != "first" {
		t.Fatalf("GetTaskDef returned %+v", def)
	}

	def.Description = "second"
	def.RetryCount = 5
	_, err = metadataClient.UpdateTaskDef(ctx, def)
	must(t, "UpdateTaskDef", err)
	def, _, err = metadataClient.GetTaskDef(ctx, taskName)
	must(t, "GetTaskDef after update", err)
	if def.Description != "second" || def.RetryCount != 5 {
		t.Fatalf("update not applied: %+v", def)
	}

	all, _, err := metadataClient.GetTaskDefs(ctx)
	must(t, "GetTaskDefs", err)
	found := false
	for _, d := range all {
		found = found || d.Name == taskName
	}
	if !found {
		t.Fatalf("GetTaskDefs does not list %s", taskName)
	}

	_, err = metadataClient.UnregisterTaskDef(ctx, taskName)
	must(t, "UnregisterTaskDef", err)
	_, resp, err := metadataClient.GetTaskDef(ctx, taskName)
	assertStatus(t, "GetTaskDef after unregister", resp, err, http.StatusNotFound)
}

// WorkflowDefs built with the SDK's builder: register two versions, read each and the latest,
// overwrite, list, unregister one version; an unknown name is a 404.
func TestMetadataWorkflowDefs(t *testing.T) {
	t.Parallel()
	wfName := name("meta_wf")
	taskName := name("meta_wf_task")
	registerTaskDefs(t, model.TaskDef{Name: taskName})

	build := func(version int32, description string) *workflow.ConductorWorkflow {
		return workflow.NewConductorWorkflow(wfExecutor).Name(wfName).Version(version).
			Description(description).OwnerEmail("go-sdk@example.com").
			TimeoutPolicy(workflow.TimeOutWorkflow, 600).
			Add(workflow.NewSimpleTask(taskName, "step").Input("x", "${workflow.input.x}")).
			OutputParameters(map[string]interface{}{"y": "${step.output.y}"})
	}
	must(t, "Register v1", build(1, "v1").Register(true))
	must(t, "Register v2", build(2, "v2").Register(true))

	v1, _, err := metadataClient.Get(ctx, wfName, &client.MetadataResourceApiGetOpts{Version: optional.NewInt32(1)})
	must(t, "Get v1", err)
	if v1.Version != 1 || v1.Description != "v1" || len(v1.Tasks) != 1 || v1.Tasks[0].TaskReferenceName != "step" {
		t.Fatalf("Get v1 returned %+v", v1)
	}
	if v1.TimeoutPolicy != "TIME_OUT_WF" || v1.TimeoutSeconds != 600 {
		t.Fatalf("timeout policy not kept: %q %d", v1.TimeoutPolicy, v1.TimeoutSeconds)
	}
	latest, _, err := metadataClient.Get(ctx, wfName, nil)
	must(t, "Get latest", err)
	if latest.Version != 2 || latest.Description != "v2" {
		t.Fatalf("latest is version %d (%q), want 2", latest.Version, latest.Description)
	}

	// overwrite=true replaces version 2 in place; overwrite=false refuses an existing version.
	must(t, "Register v2 again", build(2, "v2 changed").Register(true))
	latest, _, err = metadataClient.Get(ctx, wfName, nil)
	must(t, "Get latest after overwrite", err)
	if latest.Description != "v2 changed" {
		t.Fatalf("overwrite not applied: %q", latest.Description)
	}
	if err := build(2, "v2 refused").Register(false); err == nil {
		t.Fatalf("Register(overwrite=false) of an existing version succeeded")
	}

	// Update (PUT /metadata/workflow) creates or replaces.
	v3 := build(3, "v3").ToWorkflowDef()
	_, err = metadataClient.Update(ctx, []model.WorkflowDef{*v3})
	must(t, "Update v3", err)
	all, _, err := metadataClient.GetAll(ctx)
	must(t, "GetAll", err)
	versions := map[int32]bool{}
	for _, d := range all {
		if d.Name == wfName {
			versions[d.Version] = true
		}
	}
	if !versions[3] {
		t.Fatalf("GetAll does not list %s v3 (versions seen %v)", wfName, versions)
	}

	_, err = metadataClient.UnregisterWorkflowDef(ctx, wfName, 3)
	must(t, "UnregisterWorkflowDef v3", err)
	_, resp, err := metadataClient.Get(ctx, wfName, &client.MetadataResourceApiGetOpts{Version: optional.NewInt32(3)})
	assertStatus(t, "Get v3 after unregister", resp, err, http.StatusNotFound)
	latest, _, err = metadataClient.Get(ctx, wfName, nil)
	must(t, "Get latest after unregister", err)
	if latest.Version != 2 {
		t.Fatalf("latest after unregistering v3 is %d, want 2", latest.Version)
	}

	_, resp, err = metadataClient.Get(ctx, name("no_such_workflow"), nil)
	assertStatus(t, "Get unknown workflow", resp, err, http.StatusNotFound)

	// A WorkflowDef without tasks is refused with Conductor's 400 body naming the field.
	resp, err = metadataClient.RegisterWorkflowDef(ctx, true, model.WorkflowDef{Name: name("empty_wf"), Version: 1})
	assertStatus(t, "RegisterWorkflowDef without tasks", resp, err, http.StatusBadRequest)
	var swaggerErr client.GenericSwaggerError
	if !errors.As(err, &swaggerErr) || !strings.Contains(string(swaggerErr.Body()), "tasks") {
		t.Fatalf("the 400 body does not name tasks: %v", err)
	}
}

// assertStatus checks that a call failed with the given HTTP status.
func assertStatus(t *testing.T, what string, resp *http.Response, err error, status int) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want HTTP %d", what, status)
	}
	var swaggerErr client.GenericSwaggerError
	if errors.As(err, &swaggerErr) {
		if swaggerErr.StatusCode() != status {
			t.Fatalf("%s: HTTP %d (%s), want %d", what, swaggerErr.StatusCode(), swaggerErr.Body(), status)
		}
		return
	}
	if resp != nil && resp.StatusCode == status {
		return
	}
	t.Fatalf("%s: error %v (response %v), want HTTP %d", what, err, resp, status)
}
