package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import com.netflix.conductor.common.metadata.tasks.Task;
import com.netflix.conductor.common.metadata.tasks.TaskResult;
import com.netflix.conductor.common.metadata.workflow.StartWorkflowRequest;
import com.netflix.conductor.common.metadata.workflow.WorkflowTask;
import com.netflix.conductor.common.run.Workflow;

import io.orkes.conductor.client.http.OrkesTaskClient;
import org.conductoross.conductor.common.model.ReturnStrategy;
import org.conductoross.conductor.common.model.SignalResponse;

/** The task client: update by reference name (async and sync), signals, polling by hand. */
class TaskClientTest {
    final OrkesTaskClient tasks = Sdk.CLIENTS.getTaskClient();

    static WorkflowTask waitTask(String ref) {
        WorkflowTask t = new WorkflowTask();
        t.setName(ref);
        t.setTaskReferenceName(ref);
        t.setType("WAIT");
        t.setInputParameters(Map.of("step", ref));
        return t;
    }

    String startWaits(String... refs) {
        String name = WorkersTest.register("java_tc", java.util.Arrays.stream(refs).map(TaskClientTest::waitTask).toList());
        StartWorkflowRequest request = new StartWorkflowRequest();
        request.setName(name);
        request.setVersion(1);
        request.setInput(Map.of());
        return Sdk.CLIENTS.getWorkflowClient().startWorkflow(request);
    }

    static Task byRef(Workflow wf, String ref) {
        return wf.getTasks().stream().filter(t -> t.getReferenceTaskName().equals(ref)).findFirst().orElseThrow();
    }

    @Test
    void updateByReferenceName() {
        String id = startWaits("a", "b", "c");
        Sdk.await(id, java.time.Duration.ofSeconds(30), wf -> !wf.getTasks().isEmpty());
        tasks.updateTask(id, "a", TaskResult.Status.COMPLETED, Map.of("via", "ref"));
        Workflow afterSync = tasks.updateTaskSync(id, "b", TaskResult.Status.COMPLETED, Map.of("via", "sync"));
        // the synchronous update answers with the workflow as it stands after the update
        assertEquals(Task.Status.COMPLETED, byRef(afterSync, "b").getStatus());
        assertEquals(Task.Status.IN_PROGRESS, byRef(afterSync, "c").getStatus());
        assertEquals(Map.of("via", "ref"), byRef(afterSync, "a").getOutputData());
        tasks.updateTask(id, "c", TaskResult.Status.FAILED_WITH_TERMINAL_ERROR, Map.of("via", "failure"));
        Workflow failed = Sdk.awaitStatus(id, Workflow.WorkflowStatus.FAILED);
        assertEquals(Task.Status.FAILED_WITH_TERMINAL_ERROR, byRef(failed, "c").getStatus());
    }

    @Test
    void signals() {
        String id = startWaits("first", "second", "third");
        Sdk.await(id, java.time.Duration.ofSeconds(30), wf -> !wf.getTasks().isEmpty());
        SignalResponse target = tasks.signal(id, Task.Status.COMPLETED, Map.of("n", 1));
        assertEquals(id, target.getWorkflowId());
        assertTrue(target.isTargetWorkflow());

        SignalResponse blockingTask = tasks.signal(id, Task.Status.COMPLETED, Map.of("n", 2), ReturnStrategy.BLOCKING_TASK);
        assertTrue(blockingTask.isBlockingTask(), blockingTask.toString());
        assertEquals("third", blockingTask.getReferenceTaskName());

        tasks.signalAsync(id, Task.Status.COMPLETED, Map.of("n", 3));
        Workflow done = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);
        assertEquals(List.of(1, 2, 3), done.getTasks().stream()
                .map(t -> ((Number) t.getOutputData().get("n")).intValue()).toList());
    }

    @Test
    void pollAndUpdateByHand() {
        String taskName = Sdk.unique("java_tc_manual");
        Sdk.CLIENTS.getMetadataClient().registerTaskDefs(List.of(WorkersTest.def(taskName, 0)));
        String name = WorkersTest.register("java_tc_poll", List.of(WorkersTest.simple(taskName, "manual", Map.of("k", 1))));
        StartWorkflowRequest request = new StartWorkflowRequest();
        request.setName(name);
        request.setVersion(1);
        request.setInput(Map.of());
        String id = Sdk.CLIENTS.getWorkflowClient().startWorkflow(request);

        List<Task> polled = tasks.batchPollTasksByTaskType(taskName, "hand-worker", 5, 2000);
        assertEquals(1, polled.size());
        Task task = polled.get(0);
        assertEquals(id, task.getWorkflowInstanceId());
        assertEquals("hand-worker", tasks.getTaskDetails(task.getTaskId()).getWorkerId());
        tasks.logMessageForTask(task.getTaskId(), "picked up by hand");
        TaskResult result = new TaskResult(task);
        result.setStatus(TaskResult.Status.COMPLETED);
        result.addOutputData("done", true);
        tasks.updateTask(result);
        Workflow wf = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);
        assertEquals(Boolean.TRUE, byRef(wf, "manual").getOutputData().get("done"));
        assertEquals("picked up by hand", tasks.getTaskLogs(task.getTaskId()).get(0).getLog());
        assertTrue(tasks.getPollData(taskName).stream().anyMatch(p -> "hand-worker".equals(p.getWorkerId())));
    }
}
