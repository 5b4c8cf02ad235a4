package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import com.netflix.conductor.client.http.EventClient;
import com.netflix.conductor.common.metadata.events.EventHandler;
import com.netflix.conductor.common.metadata.workflow.StartWorkflowRequest;
import com.netflix.conductor.common.metadata.workflow.WorkflowTask;
import com.netflix.conductor.common.run.Workflow;

/** The event client: register, list, update and remove an event handler; an EVENT task fires it. */
class EventTest {
    final EventClient events = Sdk.CLIENTS.getEventClient();

    @Test
    void handlerStartsAWorkflowOnAConductorEvent() {
        String target = WorkersTest.register("java_event_target", List.of(TaskClientTest.waitTask("held")));
        WorkflowTask publish = new WorkflowTask();
        publish.setName("publish");
        publish.setTaskReferenceName("publish");
        publish.setType("EVENT");
        String sink = Sdk.unique("java_orders");
        publish.setSink("conductor:" + sink);
        publish.setInputParameters(Map.of("orderId", "${workflow.input.orderId}"));
        String source = WorkersTest.register("java_event_source", List.of(publish));
        // Conductor's EVENT task with sink conductor:<queue> publishes conductor:<workflowName>:<queue>
        String event = "conductor:" + source + ":" + sink;

        EventHandler.StartWorkflow startWorkflow = new EventHandler.StartWorkflow();
        startWorkflow.setName(target);
        startWorkflow.setVersion(1);
        startWorkflow.setCorrelationId("${orderId}");
        startWorkflow.setInput(Map.of("orderId", "${orderId}"));
        EventHandler.Action action = new EventHandler.Action();
        action.setAction(EventHandler.Action.Type.start_workflow);
        action.setStart_workflow(startWorkflow);
        EventHandler handler = new EventHandler();
        handler.setName(Sdk.unique("java_on_order"));
        handler.setEvent(event);
        handler.setActions(List.of(action));
        handler.setActive(false);
        events.registerEventHandler(handler);

        List<EventHandler> listed = events.getEventHandlers(event, false);
        assertEquals(1, listed.size());
        assertFalse(listed.get(0).isActive());
        assertTrue(events.getEventHandlers(event, true).isEmpty());
        handler.setActive(true);
        events.updateEventHandler(handler);
        assertEquals(1, events.getEventHandlers(event, true).size());

        String orderId = Sdk.unique("order");
        StartWorkflowRequest request = new StartWorkflowRequest();
        request.setName(source);
        request.setVersion(1);
        request.setInput(Map.of("orderId", orderId));
        String sourceId = Sdk.CLIENTS.getWorkflowClient().startWorkflow(request);
        Sdk.awaitStatus(sourceId, Workflow.WorkflowStatus.COMPLETED);

        List<Workflow> started = awaitStarted(target, orderId);
        assertEquals(orderId, started.get(0).getInput().get("orderId"));

        events.unregisterEventHandler(handler.getName());
        assertTrue(events.getEventHandlers(event, false).isEmpty());
    }

    List<Workflow> awaitStarted(String workflowName, String correlationId) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            List<Workflow> found = Sdk.CLIENTS.getWorkflowClient().getWorkflows(workflowName, correlationId, true, false);
            if (!found.isEmpty()) {
                return found;
            }
            Sdk.sleep(200);
        }
        throw new AssertionError("the event handler started no " + workflowName + " for " + correlationId);
    }
}
