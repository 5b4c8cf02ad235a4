package e2e

import (
	"sort"
	"testing"

	"github.com/antihax/optional"
	"github.com/conductor-sdk/conductor-go/sdk/client"
	"github.com/conductor-sdk/conductor-go/sdk/model"
)

// Search for workflows by query (workflowType, status, correlationId) and free text,
// with paging; and for tasks by query.
func TestSearchWorkflowsAndTasks(t *testing.T) {
	t.Parallel()
	taskName, wfName := name("search_task"), name("search_wf")
	registerTaskDefs(t, model.TaskDef{Name: taskName})
	oneTaskWorkflow(t, wfName, taskName)
	ids := map[string]bool{}
	var terminated string
	for i := 0; i < 3; i++ {
		id, err := wfExecutor.StartWorkflow(&model.StartWorkflowRequest{Name: wfName, Version: 1,
			CorrelationId: runID + "-search-" + string(rune('a'+i)), Input: map[string]interface{}{"n": i}})
		must(t, "StartWorkflow", err)
		ids[id] = true
		terminated = id
	}
	must(t, "Terminate", wfExecutor.Terminate(terminated, "search test"))
	waitStatus(t, terminated, model.TerminatedWorkflow)

	found, err := wfExecutor.Search(0, 10, "workflowType IN ("+wfName+")", "*")
	must(t, "Search by workflowType", err)
	got := []string{}
	for _, s := range found {
		if !ids[s.WorkflowId] || s.WorkflowType != wfName {
			t.Fatalf("search returned a stranger: %+v", s)
		}
		got = append(got, s.WorkflowId)
	}
	if len(got) != 3 {
		t.Fatalf("search by workflowType found %d of 3: %v", len(got), got)
	}

	running, _, err := workflowClient.Search(ctx, &client.WorkflowResourceApiSearchOpts{
		Query: optional.NewString("workflowType IN (" + wfName + ") AND status IN (RUNNING)"),
		Size:  optional.NewInt32(10)})
	must(t, "Search RUNNING", err)
	if running.TotalHits != 2 || len(running.Results) != 2 {
		t.Fatalf("RUNNING: totalHits %d, %d results", running.TotalHits, len(running.Results))
	}
	for _, s := range running.Results {
		if s.Status != "RUNNING" || s.WorkflowId == terminated {
			t.Fatalf("RUNNING search returned %+v", s)
		}
	}

	page1, _, err := workflowClient.Search(ctx, &client.WorkflowResourceApiSearchOpts{
		Query: optional.NewString("workflowType IN (" + wfName + ")"), Start: optional.NewInt32(0),
		Size: optional.NewInt32(2), Sort: optional.NewString("correlationId:ASC")})
	must(t, "Search page 1", err)
	page2, _, err := workflowClient.Search(ctx, &client.WorkflowResourceApiSearchOpts{
		Query: optional.NewString("workflowType IN (" + wfName + ")"), Start: optional.NewInt32(2),
		Size: optional.NewInt32(2), Sort: optional.NewString("correlationId:ASC")})
	must(t, "Search page 2", err)
	if page1.TotalHits != 3 || len(page1.Results) != 2 || len(page2.Results) != 1 {
		t.Fatalf("paging: totalHits %d, pages of %d and %d", page1.TotalHits, len(page1.Results), len(page2.Results))
	}
	corr := []string{page1.Results[0].CorrelationId, page1.Results[1].CorrelationId, page2.Results[0].CorrelationId}
	if !sort.StringsAreSorted(corr) || corr[0] != runID+"-search-a" {
		t.Fatalf("sort correlationId:ASC gave %v", corr)
	}

	byCorr, err := wfExecutor.Search(0, 10, "correlationId = "+runID+"-search-b", "")
	must(t, "Search by correlationId", err)
	if len(byCorr) != 1 || byCorr[0].CorrelationId != runID+"-search-b" {
		t.Fatalf("search by correlationId: %+v", byCorr)
	}

	tasks, _, err := taskClient.Search(ctx, &client.TaskResourceApiSearch1Opts{
		Query: optional.NewString("taskType IN (" + taskName + ") AND status IN (SCHEDULED)"),
		Size:  optional.NewInt32(10)})
	must(t, "task Search", err)
	if tasks.TotalHits != 2 || len(tasks.Results) != 2 {
		t.Fatalf("task search: totalHits %d, %d results", tasks.TotalHits, len(tasks.Results))
	}
	for _, s := range tasks.Results {
		if s.TaskType != taskName || s.Status != "SCHEDULED" || !ids[s.WorkflowId] {
			t.Fatalf("task search returned %+v", s)
		}
	}
	// The two RUNNING ones are left for the server's cleanup: terminate them.
	for _, s := range running.Results {
		must(t, "Terminate", wfExecutor.Terminate(s.WorkflowId, "search test done"))
	}
}
