package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.conductoross.conductor.client.FileClient;
import org.conductoross.conductor.client.model.file.FileMetadata;
import org.conductoross.conductor.client.model.file.FileUploadStatus;
import org.conductoross.conductor.sdk.file.FileUploadOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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

/**
 * The SDK's {@code FileClient} against the server's file storage (/api/files, storage type
 * CONDUCTOR): upload, metadata and download by workflow id, a {@code conductor://file/<id>}
 * handle passed from one worker to the next, and a workflow outside the owner's family refused.
 */
class FileClientTest {
    private final FileClient files = new FileClient(Sdk.CLIENT);

    @TempDir
    Path dir;

    private static String sha256(byte[] data) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    }

    private String startOneTaskWorkflow() {
        String taskName = Sdk.unique("java_file_idle");
        TaskDef def = new TaskDef(taskName);
        def.setOwnerEmail("dev@example.com");
        Sdk.CLIENTS.getMetadataClient().registerTaskDefs(List.of(def));
        WorkflowTask only = new WorkflowTask();
        only.setName(taskName);
        only.setTaskReferenceName("only");
        WorkflowDef wf = new WorkflowDef();
        wf.setName(Sdk.unique("java_file_owner"));
        wf.setVersion(1);
        wf.setOwnerEmail("dev@example.com");
        wf.setTasks(List.of(only));
        Sdk.CLIENTS.getMetadataClient().registerWorkflowDef(wf);
        StartWorkflowRequest start = new StartWorkflowRequest();
        start.setName(wf.getName());
        start.setVersion(1);
        return Sdk.CLIENTS.getWorkflowClient().startWorkflow(start);
    }

    @Test
    void uploadMetadataDownloadAndScope() throws Exception {
        String owner = startOneTaskWorkflow();
        byte[] data = new byte[3 * 1024 * 1024 + 17];  // above Django's in-memory spool size
        new Random(29).nextBytes(data);
        Path source = dir.resolve("model.bin");
        Files.write(source, data);

        String handle = files.upload(owner, source,
                new FileUploadOptions().setContentType("application/x-model"));
        assertTrue(handle.startsWith("conductor://file/"), handle);

        FileMetadata meta = files.getMetadata(owner, handle);
        assertEquals(handle, meta.getFileHandleId());
        assertEquals(FileUploadStatus.UPLOADED, meta.getUploadStatus());
        assertEquals("model.bin", meta.getFileName());
        assertEquals("application/x-model", meta.getContentType());
        assertEquals(data.length, meta.getFileSize());
        assertEquals("CONDUCTOR", meta.getStorageType());
        assertEquals(owner, meta.getWorkflowId());
        assertEquals(sha256(data), meta.getContentHash());

        Path copy = files.download(owner, handle, dir.resolve("out/copy.bin"));
        assertArrayEquals(data, Files.readAllBytes(copy));

        String stranger = startOneTaskWorkflow();
        ConductorClientException refused = assertThrows(ConductorClientException.class,
                () -> files.getMetadata(stranger, handle));
        assertEquals(403, refused.getStatus());
        Sdk.CLIENTS.getWorkflowClient().terminateWorkflow(owner, "test done");
        Sdk.CLIENTS.getWorkflowClient().terminateWorkflow(stranger, "test done");
    }

    @Test
    void aHandlePassesFromOneWorkerToTheNext() throws Exception {
        String produce = Sdk.unique("java_file_produce");
        String consume = Sdk.unique("java_file_consume");
        for (String name : List.of(produce, consume)) {
            TaskDef def = new TaskDef(name);
            def.setOwnerEmail("dev@example.com");
            def.setRetryCount(0);
            Sdk.CLIENTS.getMetadataClient().registerTaskDefs(List.of(def));
        }
        WorkflowTask first = new WorkflowTask();
        first.setName(produce);
        first.setTaskReferenceName("produce");
        first.setInputParameters(Map.of("rows", "${workflow.input.rows}"));
        WorkflowTask second = new WorkflowTask();
        second.setName(consume);
        second.setTaskReferenceName("consume");
        second.setInputParameters(Map.of("report", "${produce.output.report}"));
        WorkflowDef wf = new WorkflowDef();
        wf.setName(Sdk.unique("java_file_handoff"));
        wf.setVersion(1);
        wf.setOwnerEmail("dev@example.com");
        wf.setTasks(List.of(first, second));
        Sdk.CLIENTS.getMetadataClient().registerWorkflowDef(wf);

        Worker producer = Worker.create(produce, (Task task) -> {
            TaskResult result = new TaskResult(task);
            try {
                Path csv = Files.createTempFile(dir, "report", ".csv");
                StringBuilder text = new StringBuilder("n,square\n");
                int rows = ((Number) task.getInputData().get("rows")).intValue();
                for (int i = 1; i <= rows; i++) {
                    text.append(i).append(',').append(i * i).append('\n');
                }
                Files.writeString(csv, text);
                String handle = files.upload(task.getWorkflowInstanceId(), csv, new FileUploadOptions()
                        .setFileName("report.csv").setContentType("text/csv").setTaskId(task.getTaskId()));
                result.addOutputData("report", handle);
                result.setStatus(TaskResult.Status.COMPLETED);
            } catch (Exception e) {
                result.setReasonForIncompletion(e.toString());
                result.setStatus(TaskResult.Status.FAILED);
            }
            return result;
        });
        Worker consumer = Worker.create(consume, (Task task) -> {
            TaskResult result = new TaskResult(task);
            try {
                String handle = (String) task.getInputData().get("report");
                Path local = files.download(task.getWorkflowInstanceId(), handle,
                        dir.resolve("in-" + task.getTaskId() + ".csv"));
                List<String> lines = Files.readAllLines(local, StandardCharsets.UTF_8);
                result.addOutputData("lines", lines.size());
                result.addOutputData("last", lines.get(lines.size() - 1));
                result.addOutputData("producedBy", files.getMetadata(task.getWorkflowInstanceId(), handle).getTaskId());
                result.setStatus(TaskResult.Status.COMPLETED);
            } catch (Exception e) {
                result.setReasonForIncompletion(e.toString());
                result.setStatus(TaskResult.Status.FAILED);
            }
            return result;
        });
        TaskRunnerConfigurer runner = new TaskRunnerConfigurer.Builder(Sdk.CLIENTS.getTaskClient(),
                List.of(producer, consumer)).withThreadCount(2).build();
        runner.init();
        try {
            StartWorkflowRequest start = new StartWorkflowRequest();
            start.setName(wf.getName());
            start.setVersion(1);
            start.setInput(Map.of("rows", 50));
            String id = Sdk.CLIENTS.getWorkflowClient().startWorkflow(start);
            Workflow done = Sdk.await(id, java.time.Duration.ofSeconds(60),
                    w -> w.getStatus().isTerminal());
            assertEquals(Workflow.WorkflowStatus.COMPLETED, done.getStatus(), done.getReasonForIncompletion()
                    + " " + done.getTasks().stream().map(t -> t.getReasonForIncompletion()).toList());
            Map<String, Object> out = done.getTaskByRefName("consume").getOutputData();
            assertEquals(51, ((Number) out.get("lines")).intValue());
            assertEquals("50,2500", out.get("last"));
            assertEquals(done.getTaskByRefName("produce").getTaskId(), out.get("producedBy"));
            String handle = (String) done.getTaskByRefName("produce").getOutputData().get("report");
            assertTrue(handle.startsWith("conductor://file/"), handle);
        } finally {
            runner.shutdown();
        }
    }
}
