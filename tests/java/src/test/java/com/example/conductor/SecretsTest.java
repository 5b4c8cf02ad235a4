package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import com.netflix.conductor.client.automator.TaskRunnerConfigurer;
import com.netflix.conductor.client.exception.ConductorClientException;
import com.netflix.conductor.client.worker.Worker;
import com.netflix.conductor.common.metadata.tasks.Task;
import com.netflix.conductor.common.metadata.tasks.TaskDef;
import com.netflix.conductor.common.metadata.tasks.TaskResult;
import com.netflix.conductor.common.metadata.workflow.StartWorkflowRequest;
import com.netflix.conductor.common.metadata.workflow.WorkflowDef;
import com.netflix.conductor.common.metadata.workflow.WorkflowTask;
import com.netflix.conductor.common.run.Workflow;

import io.orkes.conductor.client.SecretClient;
import io.orkes.conductor.client.http.OrkesSecretClient;

/**
 * The secrets store through the SDK's SecretClient (the suite's key is an admin key), and a
 * secret used by a workflow: the worker polling the task receives the value, while the
 * execution keeps the expression and shows the worker's echo of the value as {@code ***}.
 */
class SecretsTest {
    private final SecretClient secrets = new OrkesSecretClient(Sdk.CLIENT);

    @Test
    void putGetListExistsDelete() {
        String key = Sdk.unique("java_secret");
        secrets.putSecret("s3cr3t-value-é", key);
        assertEquals("s3cr3t-value-é", secrets.getSecret(key));
        assertTrue(secrets.secretExists(key));
        assertTrue(secrets.listAllSecretNames().contains(key));

        secrets.putSecret("second-value", key);
        assertEquals("second-value", secrets.getSecret(key));

        secrets.deleteSecret(key);
        assertFalse(secrets.secretExists(key));
        ConductorClientException e = assertThrows(ConductorClientException.class, () -> secrets.getSecret(key));
        assertEquals(404, e.getStatus());
    }

    @Test
    void aWorkerReceivesTheValueAndTheExecutionNeverShowsIt() {
        String key = Sdk.unique("java_token");
        String value = "tok-" + Sdk.unique("v");
        secrets.putSecret(value, key);
        String taskName = Sdk.unique("java_secret_echo");
        TaskDef def = new TaskDef(taskName);
        def.setOwnerEmail("dev@example.com");
        def.setRetryCount(0);
        Sdk.CLIENTS.getMetadataClient().registerTaskDefs(List.of(def));

        WorkflowTask call = new WorkflowTask();
        call.setName(taskName);
        call.setTaskReferenceName("call");
        call.setInputParameters(Map.of("token", "${workflow.secrets." + key + "}"));
        WorkflowDef wf = new WorkflowDef();
        wf.setName(Sdk.unique("java_secret_wf"));
        wf.setVersion(1);
        wf.setOwnerEmail("dev@example.com");
        wf.setTasks(List.of(call));
        Sdk.CLIENTS.getMetadataClient().registerWorkflowDef(wf);

        // the worker echoes what it received: the server stores the echo masked
        Worker echo = Worker.create(taskName, (Task task) -> {
            TaskResult result = new TaskResult(task);
            Object token = task.getInputData().get("token");
            result.addOutputData("received", token);
            result.addOutputData("resolved", value.equals(token));
            result.setStatus(TaskResult.Status.COMPLETED);
            return result;
        });
        TaskRunnerConfigurer runner = new TaskRunnerConfigurer.Builder(Sdk.CLIENTS.getTaskClient(), List.of(echo))
                .withThreadCount(1)
                .build();
        runner.init();
        try {
            StartWorkflowRequest start = new StartWorkflowRequest();
            start.setName(wf.getName());
            start.setVersion(1);
            String id = Sdk.CLIENTS.getWorkflowClient().startWorkflow(start);
            Workflow done = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);

            Task task = done.getTasks().get(0);
            assertEquals(Boolean.TRUE, task.getOutputData().get("resolved"));
            assertEquals("***", task.getOutputData().get("received"));
            assertEquals("${workflow.secrets." + key + "}", task.getInputData().get("token"));
            Task fetched = Sdk.CLIENTS.getTaskClient().getTaskDetails(task.getTaskId());
            String shown = task.getInputData() + " " + task.getOutputData() + " " + done.getOutput() + " "
                    + fetched.getInputData() + " " + fetched.getOutputData();
            assertTrue(shown.contains("***"), shown);
            assertFalse(shown.contains(value), "the secret's value is shown by getWorkflow/getTask: " + shown);
        } finally {
            runner.shutdown();
            secrets.deleteSecret(key);
        }
    }
}
