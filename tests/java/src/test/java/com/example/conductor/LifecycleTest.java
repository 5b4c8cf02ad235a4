package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.netflix.conductor.common.metadata.tasks.Task;
import com.netflix.conductor.common.metadata.tasks.TaskResult;
import com.netflix.conductor.common.metadata.workflow.RerunWorkflowRequest;
import com.netflix.conductor.common.metadata.workflow.StartWorkflowRequest;
import com.netflix.conductor.common.metadata.workflow.WorkflowDef;
import com.netflix.conductor.common.run.SearchResult;
import com.netflix.conductor.common.run.Workflow;
import com.netflix.conductor.common.run.WorkflowSummary;

import io.orkes.conductor.client.http.OrkesTaskClient;
import io.orkes.conductor.client.http.OrkesWorkflowClient;

/**
 * The workflow client's lifecycle: pause, resume, terminate, restart, retry, rerun, skip,
 * search and getWorkflow with tasks; the tasks are completed from outside with the task
 * client's update by reference name.
 */
class LifecycleTest {
    static final String STEP = "java_lc_step";
    static String workflow;
    final OrkesWorkflowClient workflows = Sdk.CLIENTS.getWorkflowClient();
    final OrkesTaskClient tasks = Sdk.CLIENTS.getTaskClient();

    @BeforeAll
    static void register() {
        Sdk.CLIENTS.getMetadataClient().registerTaskDefs(List.of(WorkersTest.def(STEP, 0)));
        workflow = WorkersTest.register("java_lc", List.of(
                WorkersTest.simple(STEP, "first", Map.of("x", "${workflow.input.x}")),
                WorkersTest.simple(STEP, "second", Map.of("y", "${first.output.y}"))));
        WorkflowDef def = Sdk.CLIENTS.getMetadataClient().getWorkflowDef(workflow, 1);
        def.setOutputParameters(Map.of("y", "${first.output.y}", "z", "${second.output.z}"));
        Sdk.CLIENTS.getMetadataClient().updateWorkflowDefs(List.of(def));
    }

    String start(String correlationId, int x) {
        StartWorkflowRequest request = new StartWorkflowRequest();
        request.setName(workflow);
        request.setVersion(1);
        request.setCorrelationId(correlationId);
        request.setInput(Map.of("x", x));
        return workflows.startWorkflow(request);
    }

    Task task(String workflowId, String ref) {
        Workflow wf = Sdk.await(workflowId, Duration.ofSeconds(30),
                w -> w.getTasks().stream().anyMatch(t -> t.getReferenceTaskName().equals(ref) && !t.getStatus().isTerminal()));
        return wf.getTasks().stream().filter(t -> t.getReferenceTaskName().equals(ref) && !t.getStatus().isTerminal())
                .findFirst().orElseThrow();
    }

    @Test
    void pauseResumeTerminateRestart() {
        String corr = Sdk.unique("corr");
        String id = start(corr, 1);
        task(id, "first");
        workflows.pauseWorkflow(id);
        assertEquals(Workflow.WorkflowStatus.PAUSED, workflows.getWorkflow(id, false).getStatus());
        // completing a task of a paused workflow does not schedule the next one
        tasks.updateTask(id, "first", TaskResult.Status.COMPLETED, Map.of("y", 2));
        Workflow paused = workflows.getWorkflow(id, true);
        assertEquals(Workflow.WorkflowStatus.PAUSED, paused.getStatus());
        assertTrue(paused.getTasks().stream().noneMatch(t -> t.getReferenceTaskName().equals("second")));

        workflows.resumeWorkflow(id);
        Task second = task(id, "second");
        assertEquals(2, ((Number) second.getInputData().get("y")).intValue());

        workflows.terminateWorkflow(id, "operator stopped it");
        Workflow terminated = workflows.getWorkflow(id, true);
        assertEquals(Workflow.WorkflowStatus.TERMINATED, terminated.getStatus());
        assertEquals("operator stopped it", terminated.getReasonForIncompletion());
        assertEquals(Task.Status.CANCELED, terminated.getTasks().get(1).getStatus());

        workflows.restart(id, false);
        Task firstAgain = task(id, "first");
        assertEquals(Workflow.WorkflowStatus.RUNNING, workflows.getWorkflow(id, false).getStatus());
        assertEquals(1, workflows.getWorkflow(id, true).getTasks().size());
        assertEquals(1, ((Number) firstAgain.getInputData().get("x")).intValue());
        workflows.terminateWorkflow(id, "done");
    }

    @Test
    void retryAfterFailure() {
        String id = start(Sdk.unique("corr"), 3);
        task(id, "first");
        tasks.updateTask(id, "first", TaskResult.Status.COMPLETED, Map.of("y", 4));
        Task second = task(id, "second");
        TaskResult failed = new TaskResult(second);
        failed.setStatus(TaskResult.Status.FAILED);
        failed.setReasonForIncompletion("downstream was down");
        tasks.updateTask(failed);
        Workflow wf = Sdk.awaitStatus(id, Workflow.WorkflowStatus.FAILED);
        assertTrue(wf.getReasonForIncompletion().contains("downstream was down"), wf.getReasonForIncompletion());

        workflows.retryLastFailedTask(id);
        Task retried = task(id, "second");
        assertNotEquals(second.getTaskId(), retried.getTaskId());
        assertEquals(Workflow.WorkflowStatus.RUNNING, workflows.getWorkflow(id, false).getStatus());
        tasks.updateTask(id, "second", TaskResult.Status.COMPLETED, Map.of("z", 5));
        Workflow done = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);
        assertEquals(Map.of("y", 4, "z", 5), done.getOutput());
        // getWorkflow with tasks lists both attempts of "second"; without tasks, none
        assertEquals(3, done.getTasks().size());
        assertEquals(0, workflows.getWorkflow(id, false).getTasks().size());
    }

    @Test
    void rerunFromATask() {
        String id = start(Sdk.unique("corr"), 7);
        tasks.updateTask(id, task(id, "first").getReferenceTaskName(), TaskResult.Status.COMPLETED, Map.of("y", 8));
        task(id, "second");
        tasks.updateTask(id, "second", TaskResult.Status.COMPLETED, Map.of("z", 9));
        Workflow done = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);
        String secondId = done.getTasks().get(1).getTaskId();

        RerunWorkflowRequest rerun = new RerunWorkflowRequest();
        rerun.setReRunFromWorkflowId(id);
        rerun.setReRunFromTaskId(secondId);
        rerun.setTaskInput(Map.of("y", 80));
        assertEquals(id, workflows.rerunWorkflow(id, rerun));
        Task again = task(id, "second");
        assertEquals(80, ((Number) again.getInputData().get("y")).intValue());
        tasks.updateTask(id, "second", TaskResult.Status.COMPLETED, Map.of("z", 90));
        assertEquals(Map.of("y", 8, "z", 90), Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED).getOutput());
    }

    @Test
    void skipATask() {
        String id = start(Sdk.unique("corr"), 1);
        task(id, "first");
        workflows.skipTaskFromWorkflow(id, "second");
        tasks.updateTask(id, "first", TaskResult.Status.COMPLETED, Map.of("y", 1));
        Workflow wf = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);
        Task second = wf.getTasks().stream().filter(t -> t.getReferenceTaskName().equals("second")).findFirst().orElseThrow();
        assertEquals(Task.Status.SKIPPED, second.getStatus());
    }

    @Test
    void search() {
        String corr = Sdk.unique("corr");
        String running = start(corr, 1);
        String stopped = start(corr, 2);
        workflows.terminateWorkflow(stopped, "search test");
        SearchResult<WorkflowSummary> all = awaitSearch("correlationId = '" + corr + "'", 2);
        assertEquals(Set(running, stopped), Set(all.getResults().stream().map(WorkflowSummary::getWorkflowId).toList()));
        SearchResult<WorkflowSummary> terminated = awaitSearch(
                "correlationId = '" + corr + "' AND status = 'TERMINATED'", 1);
        assertEquals(stopped, terminated.getResults().get(0).getWorkflowId());
        assertEquals(workflow, terminated.getResults().get(0).getWorkflowType());
        SearchResult<Workflow> v2 = workflows.searchV2(0, 10, null, "*", "correlationId = '" + corr + "' AND status = 'RUNNING'");
        assertEquals(List.of(running), v2.getResults().stream().map(Workflow::getWorkflowId).toList());
        List<Workflow> byCorrelation = workflows.getWorkflows(workflow, corr, true, false);
        assertEquals(2, byCorrelation.size());
        workflows.terminateWorkflow(running, "search test");
    }

    SearchResult<WorkflowSummary> awaitSearch(String query, int expected) {
        SearchResult<WorkflowSummary> result = null;
        for (int i = 0; i < 50; i++) {
            result = workflows.search(0, 10, null, "*", query);
            if (result.getTotalHits() == expected) {
                return result;
            }
            Sdk.sleep(200);
        }
        throw new AssertionError("search " + query + " found " + result.getTotalHits() + ", not " + expected);
    }

    static <T> java.util.Set<T> Set(List<T> items) {
        return new java.util.HashSet<>(items);
    }

    static <T> java.util.Set<T> Set(T a, T b) {
        return java.util.Set.of(a, b);
    }
}
