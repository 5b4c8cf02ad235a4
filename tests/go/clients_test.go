package e2e

import (
	"net/http"
	"testing"

	"github.com/antihax/optional"
	"github.com/conductor-sdk/conductor-go/sdk/client"
	"github.com/conductor-sdk/conductor-go/sdk/model"
	"github.com/conductor-sdk/conductor-go/sdk/workflow"
)

// The scheduler client: save a schedule (Conductor's six-field cron), read it back and in
// the list for its workflow, pause and resume it, ask for the next runs of a cron, delete it.
func TestSchedulerClient(t *testing.T) {
	t.Parallel()
	schedulerClient := client.NewSchedulerClient(apiClient)
	wfName, schedule := name("scheduled_wf"), name("nightly")
	wf := workflow.NewConductorWorkflow(wfExecutor).Name(wfName).Version(1).OwnerEmail("go-sdk@example.com").
		Add(workflow.NewInlineTask("noop", "(function(){ return 1; })()"))
	must(t, "Register", wf.Register(true))

	_, _, err := schedulerClient.SaveSchedule(ctx, model.SaveScheduleRequest{Name: schedule,
		CronExpression: "0 0 3 * * ?", Paused: true,
		StartWorkflowRequest: &model.StartWorkflowRequest{Name: wfName, Version: 1,
			Input: map[string]interface{}{"from": "schedule"}}})
	must(t, "SaveSchedule", err)
	got, _, err := schedulerClient.GetSchedule(ctx, schedule)
	must(t, "GetSchedule", err)
	if got.Name != schedule || got.CronExpression != "0 0 3 * * ?" || !got.Paused ||
		got.StartWorkflowRequest == nil || got.StartWorkflowRequest.Name != wfName {
		t.Fatalf("GetSchedule returned %+v", got)
	}
	all, _, err := schedulerClient.GetAllSchedules(ctx, &client.SchedulerResourceApiGetAllSchedulesOpts{
		WorkflowName: optional.NewString(wfName)})
	must(t, "GetAllSchedules", err)
	if len(all) != 1 || all[0].Name != schedule {
		t.Fatalf("GetAllSchedules(workflowName) returned %d schedules: %+v", len(all), all)
	}

	_, _, err = schedulerClient.ResumeSchedule(ctx, schedule)
	must(t, "ResumeSchedule", err)
	if got, _, _ = schedulerClient.GetSchedule(ctx, schedule); got.Paused {
		t.Fatalf("schedule still paused after ResumeSchedule")
	}
	_, _, err = schedulerClient.PauseSchedule(ctx, schedule)
	must(t, "PauseSchedule", err)
	if got, _, _ = schedulerClient.GetSchedule(ctx, schedule); !got.Paused {
		t.Fatalf("schedule not paused after PauseSchedule")
	}

	next, _, err := schedulerClient.GetNextFewSchedules(ctx, "0 0 3 * * ?",
		&client.SchedulerResourceApiGetNextFewSchedulesOpts{Limit: optional.NewInt32(3)})
	must(t, "GetNextFewSchedules", err)
	if len(next) != 3 || next[1]-next[0] != 86_400_000 || next[2]-next[1] != 86_400_000 {
		t.Fatalf("next runs of a daily cron: %v (epoch ms one day apart)", next)
	}

	_, _, err = schedulerClient.DeleteSchedule(ctx, schedule)
	must(t, "DeleteSchedule", err)
	_, resp, err := schedulerClient.GetSchedule(ctx, schedule)
	assertStatus(t, "GetSchedule after delete", resp, err, http.StatusNotFound)
}

// The event handler client: add, list for the event (active only or all), update, remove.
func TestEventHandlerClient(t *testing.T) {
	t.Parallel()
	eventClient := client.NewEventHandlerClient(apiClient)
	handler := model.EventHandler{Name: name("on_order"), Event: "conductor:" + name("orders") + ":created",
		Active: true, Actions: []model.Action{{Action: "start_workflow",
			StartWorkflow: &model.StartWorkflow{Name: name("handle_order"), Version: 1,
				Input: map[string]interface{}{"order": "${orderId}"}}}}}
	_, err := eventClient.AddEventHandler(ctx, handler)
	must(t, "AddEventHandler", err)

	forEvent, _, err := eventClient.GetEventHandlersForEvent(ctx, handler.Event,
		&client.EventResourceApiGetEventHandlersForEventOpts{ActiveOnly: optional.NewBool(true)})
	must(t, "GetEventHandlersForEvent", err)
	if len(forEvent) != 1 || forEvent[0].Name != handler.Name || len(forEvent[0].Actions) != 1 ||
		forEvent[0].Actions[0].StartWorkflow == nil || forEvent[0].Actions[0].StartWorkflow.Name != name("handle_order") {
		t.Fatalf("handlers for %s: %+v", handler.Event, forEvent)
	}

	handler.Active = false
	_, err = eventClient.UpdateEventHandler(ctx, handler)
	must(t, "UpdateEventHandler", err)
	active, _, err := eventClient.GetEventHandlersForEvent(ctx, handler.Event,
		&client.EventResourceApiGetEventHandlersForEventOpts{ActiveOnly: optional.NewBool(true)})
	must(t, "GetEventHandlersForEvent active only", err)
	if len(active) != 0 {
		t.Fatalf("an inactive handler is listed as active: %+v", active)
	}
	all, _, err := eventClient.GetEventHandlers(ctx)
	must(t, "GetEventHandlers", err)
	found := false
	for _, h := range all {
		found = found || (h.Name == handler.Name && !h.Active)
	}
	if !found {
		t.Fatalf("GetEventHandlers does not list the inactive %s", handler.Name)
	}

	_, err = eventClient.RemoveEventHandler(ctx, handler.Name)
	must(t, "RemoveEventHandler", err)
	all, _, err = eventClient.GetEventHandlers(ctx)
	must(t, "GetEventHandlers after remove", err)
	for _, h := range all {
		if h.Name == handler.Name {
			t.Fatalf("%s still listed after RemoveEventHandler", handler.Name)
		}
	}
}

// The bulk client: pause, resume, terminate and restart several workflows in one call; an
// unknown id is reported in bulkErrorResults, the others in bulkSuccessfulResults.
func TestWorkflowBulkClient(t *testing.T) {
	t.Parallel()
	bulk := client.NewWorkflowBulkClient(apiClient)
	wfName := name("bulk_wf")
	wf := workflow.NewConductorWorkflow(wfExecutor).Name(wfName).Version(1).OwnerEmail("go-sdk@example.com").
		Restartable(true).Add(workflow.NewWaitTask("hold"))
	must(t, "Register", wf.Register(true))
	ids := []string{}
	for i := 0; i < 3; i++ {
		id, err := wfExecutor.StartWorkflow(&model.StartWorkflowRequest{Name: wfName, Version: 1})
		must(t, "StartWorkflow", err)
		ids = append(ids, id)
	}
	unknown := "00000000-0000-0000-0000-000000000000"

	check := func(what string, resp model.BulkResponse, status model.WorkflowStatus) {
		t.Helper()
		if len(resp.BulkSuccessfulResults) != 3 || len(resp.BulkErrorResults) != 1 || resp.BulkErrorResults[unknown] == "" {
			t.Fatalf("%s: %+v", what, resp)
		}
		for _, id := range ids {
			waitStatus(t, id, status)
		}
	}
	resp, _, err := bulk.Pause(ctx, append(ids, unknown))
	must(t, "bulk Pause", err)
	check("bulk Pause", resp, model.PausedWorkflow)
	resp, _, err = bulk.Resume(ctx, append(ids, unknown))
	must(t, "bulk Resume", err)
	check("bulk Resume", resp, model.RunningWorkflow)
	resp, _, err = bulk.Terminate(ctx, append(ids, unknown),
		&client.WorkflowBulkResourceApiTerminateOpts{Reason: optional.NewString("bulk stop")})
	must(t, "bulk Terminate", err)
	check("bulk Terminate", resp, model.TerminatedWorkflow)
	if wf := getWorkflow(t, ids[0]); wf.ReasonForIncompletion != "bulk stop" {
		t.Fatalf("bulk terminate reason %q", wf.ReasonForIncompletion)
	}
	resp, _, err = bulk.Restart(ctx, append(ids, unknown), nil)
	must(t, "bulk Restart", err)
	check("bulk Restart", resp, model.RunningWorkflow)
	resp, _, err = bulk.Terminate(ctx, ids, nil)
	must(t, "bulk Terminate again", err)
	if len(resp.BulkSuccessfulResults) != 3 {
		t.Fatalf("second bulk Terminate: %+v", resp)
	}
}
