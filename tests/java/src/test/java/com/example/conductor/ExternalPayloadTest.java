package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import com.netflix.conductor.client.automator.TaskRunnerConfigurer;
import com.netflix.conductor.client.config.ConductorClientConfiguration;
import com.netflix.conductor.client.http.TaskClient;
import com.netflix.conductor.client.http.WorkflowClient;
import com.netflix.conductor.client.worker.Worker;
import com.netflix.conductor.common.metadata.tasks.Task;
import com.netflix.conductor.common.metadata.tasks.TaskResult;
import com.netflix.conductor.common.metadata.workflow.StartWorkflowRequest;
import com.netflix.conductor.common.metadata.workflow.WorkflowDef;
import com.netflix.conductor.common.run.Workflow;

/**
 * The SDK's large-payload path: with thresholds of 1 KB, the workflow input and the task
 * output go through external payload storage (GET .../externalstoragelocation, a PUT to the
 * signed URI, the path sent instead of the data), and the server works with the data.
 */
class ExternalPayloadTest {
    static final String BIG = "java_payload_big";

    /** The SDK's client configuration, as a user enables external storage. */
    static final class SmallThresholds implements ConductorClientConfiguration {
        private final int taskOutputMaxKB;

        SmallThresholds(int taskOutputMaxKB) {
            this.taskOutputMaxKB = taskOutputMaxKB;
        }

        @Override
        public int getWorkflowInputPayloadThresholdKB() {
            return 1;
        }

        @Override
        public int getWorkflowInputMaxPayloadThresholdKB() {
            return 10240;
        }

        @Override
        public int getTaskOutputPayloadThresholdKB() {
            return 1;
        }

        @Override
        public int getTaskOutputMaxPayloadThresholdKB() {
            return taskOutputMaxKB;
        }

        @Override
        public boolean isExternalPayloadStorageEnabled() {
            return true;
        }

        @Override
        public boolean isEnforceThresholds() {
            return true;
        }
    }

    static String blob(char c, int length) {
        return String.valueOf(c).repeat(length);
    }

    @Test
    void largeWorkflowInputAndTaskOutput() {
        Sdk.CLIENTS.getMetadataClient().registerTaskDefs(List.of(WorkersTest.def(BIG, 0)));
        String name = WorkersTest.register("java_payload_wf",
                List.of(WorkersTest.simple(BIG, "big", Map.of("text", "${workflow.input.text}"))));
        WorkflowDef def = Sdk.CLIENTS.getMetadataClient().getWorkflowDef(name, 1);
        def.setOutputParameters(Map.of("inLength", "${big.output.inLength}", "out", "${big.output.out}"));
        Sdk.CLIENTS.getMetadataClient().updateWorkflowDefs(List.of(def));

        ConductorClientConfiguration config = new SmallThresholds(10240);
        AtomicReference<Task> seen = new AtomicReference<>();
        Worker worker = Worker.create(BIG, task -> {
            seen.set(task);
            TaskResult result = new TaskResult(task);
            result.setStatus(TaskResult.Status.COMPLETED);
            result.addOutputData("inLength", ((String) task.getInputData().get("text")).length());
            result.addOutputData("out", blob('o', 30_000));
            return result;
        });
        TaskRunnerConfigurer runner = new TaskRunnerConfigurer.Builder(new TaskClient(Sdk.CLIENT, config),
                List.of(worker)).withThreadCount(1).build();
        runner.init();
        try {
            WorkflowClient workflows = new WorkflowClient(Sdk.CLIENT, config);
            StartWorkflowRequest request = new StartWorkflowRequest();
            request.setName(name);
            request.setVersion(1);
            request.setInput(Map.of("text", blob('i', 20_000)));
            String id = workflows.startWorkflow(request);
            // the SDK uploaded the input and sent its path instead
            assertNull(request.getInput());
            assertTrue(request.getExternalInputPayloadStoragePath().startsWith("workflow_input/"),
                    request.getExternalInputPayloadStoragePath());

            Workflow wf = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);
            assertEquals(20_000, ((String) wf.getInput().get("text")).length());
            assertEquals(20_000, ((String) seen.get().getInputData().get("text")).length());
            assertEquals(20_000, ((Number) wf.getOutput().get("inLength")).intValue());
            assertEquals(blob('o', 30_000), wf.getOutput().get("out"));
            Task big = wf.getTasks().get(0);
            assertEquals(Task.Status.COMPLETED, big.getStatus());
            assertEquals(30_000, ((String) big.getOutputData().get("out")).length());
        } finally {
            runner.shutdown();
        }
    }

    @Test
    void outputAboveTheClientMaxFailsTheTaskTerminally() {
        String taskName = Sdk.unique("java_payload_huge");
        Sdk.CLIENTS.getMetadataClient().registerTaskDefs(List.of(WorkersTest.def(taskName, 2)));
        String name = WorkersTest.register("java_payload_huge_wf", List.of(WorkersTest.simple(taskName, "huge", Map.of())));
        Worker worker = Worker.create(taskName, task -> {
            TaskResult result = new TaskResult(task);
            result.setStatus(TaskResult.Status.COMPLETED);
            result.addOutputData("out", blob('h', 5_000));
            return result;
        });
        TaskRunnerConfigurer runner = new TaskRunnerConfigurer.Builder(new TaskClient(Sdk.CLIENT, new SmallThresholds(2)),
                List.of(worker)).withThreadCount(1).build();
        runner.init();
        try {
            String id = WorkersTest.start(name, Map.of(), null);
            Workflow wf = Sdk.awaitStatus(id, Workflow.WorkflowStatus.FAILED);
            assertEquals(1, wf.getTasks().size(), "a terminal error is not retried");
            Task huge = wf.getTasks().get(0);
            assertEquals(Task.Status.FAILED_WITH_TERMINAL_ERROR, huge.getStatus());
            assertTrue(huge.getReasonForIncompletion().contains("greater than the permissible"),
                    huge.getReasonForIncompletion());
        } finally {
            runner.shutdown();
        }
    }
}
