// End-to-end tests of conductor-web with the official Go SDK (github.com/conductor-sdk/conductor-go,
// pinned in go.mod), written as the SDK's users write code: one APIClient from the environment
// (CONDUCTOR_SERVER_URL, CONDUCTOR_AUTH_KEY, CONDUCTOR_AUTH_SECRET), the metadata, workflow and
// task clients over it, workers through worker.TaskRunner and runs through executor.WorkflowExecutor.
//
// tests/e2e/test_go_sdk.py builds this package once (go test -c), runs the binary against a
// server it started and reports each Test function as a pytest test. By hand, with a server:
//
//	export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api CONDUCTOR_AUTH_KEY=... CONDUCTOR_AUTH_SECRET=...
//	cd tests/go && go test -v ./
//
// Every test names its definitions with a prefix unique to the run, so the tests can run in
// parallel and again against the same server.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/conductor-sdk/conductor-go/sdk/client"
	"github.com/conductor-sdk/conductor-go/sdk/model"
	"github.com/conductor-sdk/conductor-go/sdk/worker"
	"github.com/conductor-sdk/conductor-go/sdk/workflow/executor"
)

// Bounds of every wait in the suite (the whole binary also runs under -test.timeout).
const (
	waitTimeout  = 60 * time.Second
	waitInterval = 100 * time.Millisecond
)

var (
	apiClient      *client.APIClient
	metadataClient client.MetadataClient
	workflowClient client.WorkflowClient
	taskClient     client.TaskClient
	wfExecutor     *executor.WorkflowExecutor
	runID          = fmt.Sprintf("go%d", time.Now().UnixNano()%1_000_000_000)
)

func TestMain(m *testing.M) {
	if os.Getenv("CONDUCTOR_SERVER_URL") == "" {
		fmt.Fprintln(os.Stderr, "CONDUCTOR_SERVER_URL is not set: point it at a conductor-web server's /api")
		os.Exit(2)
	}
	apiClient = client.NewAPIClientFromEnv()
	metadataClient = client.NewMetadataClient(apiClient)
	workflowClient = client.NewWorkflowClient(apiClient)
	taskClient = client.NewTaskClient(apiClient)
	wfExecutor = executor.NewWorkflowExecutor(apiClient)
	os.Exit(m.Run())
}

var ctx = context.Background()

// name returns a definition name unique to this run.
func name(base string) string { return runID + "_" + base }

// newRunner returns a TaskRunner over the shared APIClient whose workers are shut down when
// the test ends.
func newRunner(t *testing.T, taskNames ...string) *worker.TaskRunner {
	t.Helper()
	runner := worker.NewTaskRunnerWithApiClient(apiClient)
	t.Cleanup(func() {
		for _, n := range taskNames {
			runner.Shutdown(n)
		}
	})
	return runner
}

// registerTaskDefs registers TaskDefs with the given names (no retries unless asked).
func registerTaskDefs(t *testing.T, defs ...model.TaskDef) {
	t.Helper()
	for i := range defs {
		if defs[i].TimeoutSeconds == 0 {
			defs[i].TimeoutSeconds = 120
		}
		if defs[i].ResponseTimeoutSeconds == 0 {
			defs[i].ResponseTimeoutSeconds = 60
		}
		defs[i].OwnerEmail = "go-sdk@example.com"
	}
	if _, err := metadataClient.RegisterTaskDef(ctx, defs); err != nil {
		t.Fatalf("RegisterTaskDef: %v", err)
	}
}

// must fails the test on err.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// getWorkflow fetches a workflow with its tasks.
func getWorkflow(t *testing.T, id string) *model.Workflow {
	t.Helper()
	wf, err := wfExecutor.GetWorkflow(id, true)
	must(t, "GetWorkflow "+id, err)
	return wf
}

// waitWorkflow polls the workflow until cond holds (or fails the test after waitTimeout).
func waitWorkflow(t *testing.T, id string, what string, cond func(*model.Workflow) bool) *model.Workflow {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		wf := getWorkflow(t, id)
		if cond(wf) {
			return wf
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow %s: %s did not happen within %s; status %s, tasks %s",
				id, what, waitTimeout, wf.Status, describeTasks(wf))
		}
		time.Sleep(waitInterval)
	}
}

// waitStatus waits for the workflow to reach status.
func waitStatus(t *testing.T, id string, status model.WorkflowStatus) *model.Workflow {
	t.Helper()
	return waitWorkflow(t, id, "status "+string(status), func(wf *model.Workflow) bool { return wf.Status == status })
}

// waitTask waits until the workflow has a task with refName in the given status.
func waitTask(t *testing.T, id, refName string, status model.TaskResultStatus) *model.Task {
	t.Helper()
	wf := waitWorkflow(t, id, refName+" "+string(status), func(wf *model.Workflow) bool {
		return findTask(wf, refName, string(status)) != nil
	})
	return findTask(wf, refName, string(status))
}

// findTask returns the last task with refName (and status, unless empty).
func findTask(wf *model.Workflow, refName, status string) *model.Task {
	for i := len(wf.Tasks) - 1; i >= 0; i-- {
		task := &wf.Tasks[i]
		if task.ReferenceTaskName == refName && (status == "" || string(task.Status) == status) {
			return task
		}
	}
	return nil
}

func describeTasks(wf *model.Workflow) string {
	s := "["
	for i, task := range wf.Tasks {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s:%s", task.ReferenceTaskName, task.Status)
	}
	return s + "]"
}

// statuses lists the workflow's tasks as "ref:STATUS".
func statuses(wf *model.Workflow) []string {
	out := make([]string, 0, len(wf.Tasks))
	for _, task := range wf.Tasks {
		out = append(out, fmt.Sprintf("%s:%s", task.ReferenceTaskName, task.Status))
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
