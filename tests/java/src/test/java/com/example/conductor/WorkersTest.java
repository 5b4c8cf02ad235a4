package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.netflix.conductor.client.automator.TaskRunnerConfigurer;
import com.netflix.conductor.client.http.TaskClient;
import com.netflix.conductor.client.worker.Worker;
import com.netflix.conductor.common.metadata.tasks.Task;
import com.netflix.conductor.common.metadata.tasks.TaskDef;
import com.netflix.conductor.common.metadata.tasks.TaskExecLog;
import com.netflix.conductor.common.metadata.tasks.TaskResult;
import com.netflix.conductor.common.metadata.workflow.StartWorkflowRequest;
import com.netflix.conductor.common.metadata.workflow.WorkflowDef;
import com.netflix.conductor.common.metadata.workflow.WorkflowTask;
import com.netflix.conductor.common.run.Workflow;

/**
 * Worker implementations run by the SDK's TaskRunnerConfigurer: thread counts, polling
 * intervals, domains, task logs, callbackAfterSeconds, retries, FAILED_WITH_TERMINAL_ERROR,
 * exceptions, and the update-v2 path (taskUpdateV2=true).
 */
class WorkersTest {
    static final String PARALLEL = "java_w_parallel";
    static final String LOGGING = "java_w_logging";
    static final String CALLBACK = "java_w_callback";
    static final String FLAKY = "java_w_flaky";
    static final String TERMINAL = "java_w_terminal";
    static final String THROWING = "java_w_throwing";
    static final String DOMAIN = "java_w_domain";
    static final String V2_FIRST = "java_w_v2_first";
    static final String V2_SECOND = "java_w_v2_second";

    static final TaskClient TASKS = Sdk.CLIENTS.getTaskClient();
    static TaskRunnerConfigurer runner;
    static TaskRunnerConfigurer v2Runner;
    /** Two executions of PARALLEL must be inside execute() at once to get past this latch. */
    static final CountDownLatch BOTH_INSIDE = new CountDownLatch(2);
    static final AtomicInteger inside = new AtomicInteger();
    static final AtomicInteger maxInside = new AtomicInteger();

    /** A Worker implementation, as the SDK's users write one. */
    static final class ParallelWorker implements Worker {
        @Override
        public String getTaskDefName() {
            return PARALLEL;
        }

        @Override
        public TaskResult execute(Task task) {
            maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
            try {
                BOTH_INSIDE.countDown();
                boolean together = BOTH_INSIDE.await(30, TimeUnit.SECONDS);
                TaskResult result = new TaskResult(task);
                result.setStatus(TaskResult.Status.COMPLETED);
                result.addOutputData("together", together);
                return result;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            } finally {
                inside.decrementAndGet();
            }
        }

        @Override
        public int getPollingInterval() {
            return 50;
        }
    }

    @BeforeAll
    static void start() {
        List<TaskDef> defs = List.of(def(PARALLEL, 0), def(LOGGING, 0), def(CALLBACK, 0), def(FLAKY, 2),
                def(TERMINAL, 3), def(THROWING, 0), def(DOMAIN, 0), def(V2_FIRST, 0), def(V2_SECOND, 0));
        Sdk.CLIENTS.getMetadataClient().registerTaskDefs(defs);

        Worker logging = Worker.create(LOGGING, task -> {
            TaskResult result = new TaskResult(task);
            result.log("starting " + task.getInputData().get("item"));
            result.log("done");
            result.addOutputData("item", task.getInputData().get("item"));
            result.setStatus(TaskResult.Status.COMPLETED);
            return result;
        });
        Worker callback = Worker.create(CALLBACK, task -> {
            TaskResult result = new TaskResult(task);
            if (task.getPollCount() < 2) {
                // not ready yet: the server hands the task out again after 1 s
                result.setStatus(TaskResult.Status.IN_PROGRESS);
                result.setCallbackAfterSeconds(1);
                result.addOutputData("checks", 1);
            } else {
                result.setStatus(TaskResult.Status.COMPLETED);
                result.addOutputData("checks", 2);
            }
            return result;
        });
        Worker flaky = Worker.create(FLAKY, task -> {
            TaskResult result = new TaskResult(task);
            if (task.getRetryCount() < 2) {
                result.setStatus(TaskResult.Status.FAILED);
                result.setReasonForIncompletion("attempt " + task.getRetryCount() + " failed");
            } else {
                result.setStatus(TaskResult.Status.COMPLETED);
                result.addOutputData("attempt", task.getRetryCount());
            }
            return result;
        });
        Worker terminal = Worker.create(TERMINAL, task -> {
            TaskResult result = new TaskResult(task);
            result.setStatus(TaskResult.Status.FAILED_WITH_TERMINAL_ERROR);
            result.setReasonForIncompletion("card declined: no retry");
            return result;
        });
        Worker throwing = Worker.create(THROWING, task -> {
            throw new IllegalStateException("worker blew up");
        });
        Worker domain = Worker.create(DOMAIN, task -> {
            TaskResult result = new TaskResult(task);
            result.setStatus(TaskResult.Status.COMPLETED);
            result.addOutputData("domain", task.getDomain());
            return result;
        });

        runner = new TaskRunnerConfigurer.Builder(TASKS,
                List.of(new ParallelWorker(), logging, callback, flaky, terminal, throwing, domain))
                .withTaskThreadCount(Map.of(PARALLEL, 3, LOGGING, 1, CALLBACK, 1, FLAKY, 1, TERMINAL, 1,
                        THROWING, 1, DOMAIN, 1))
                .withTaskToDomain(Map.of(DOMAIN, "java_green"))
                .withWorkerNamePrefix("java-worker-")
                .withSleepWhenRetry(100)
                .build();
        runner.init();

        // update-v2: the runner sends POST /tasks/update-v2 and runs the next task it gets back
        System.setProperty("taskUpdateV2", "true");
        try {
            Worker first = Worker.create(V2_FIRST, task -> {
                TaskResult result = new TaskResult(task);
                result.setStatus(TaskResult.Status.COMPLETED);
                result.addOutputData("n", ((Number) task.getInputData().get("n")).intValue() + 1);
                return result;
            });
            Worker second = Worker.create(V2_SECOND, task -> {
                TaskResult result = new TaskResult(task);
                result.setStatus(TaskResult.Status.COMPLETED);
                result.addOutputData("n", ((Number) task.getInputData().get("n")).intValue() * 10);
                return result;
            });
            v2Runner = new TaskRunnerConfigurer.Builder(TASKS, List.of(first, second))
                    .withThreadCount(2)
                    .build();
            v2Runner.init();
        } finally {
            System.clearProperty("taskUpdateV2");
        }
    }

    @AfterAll
    static void stop() {
        runner.shutdown();
        v2Runner.shutdown();
    }

    static TaskDef def(String name, int retries) {
        TaskDef def = new TaskDef(name);
        def.setOwnerEmail("dev@example.com");
        def.setRetryCount(retries);
        def.setRetryDelaySeconds(0);
        def.setResponseTimeoutSeconds(60);
        def.setTimeoutSeconds(120);
        return def;
    }

    static WorkflowTask simple(String taskName, String ref, Map<String, Object> input) {
        WorkflowTask t = new WorkflowTask();
        t.setName(taskName);
        t.setTaskReferenceName(ref);
        t.setType("SIMPLE");
        t.setInputParameters(input);
        return t;
    }

    static String register(String base, List<WorkflowTask> tasks) {
        WorkflowDef def = new WorkflowDef();
        def.setName(Sdk.unique(base));
        def.setVersion(1);
        def.setOwnerEmail("dev@example.com");
        def.setTasks(tasks);
        def.setOutputParameters(Map.of());
        Sdk.CLIENTS.getMetadataClient().updateWorkflowDefs(List.of(def));
        return def.getName();
    }

    static String start(String name, Map<String, Object> input, Map<String, String> taskToDomain) {
        StartWorkflowRequest request = new StartWorkflowRequest();
        request.setName(name);
        request.setVersion(1);
        request.setInput(input);
        if (taskToDomain != null) {
            request.setTaskToDomain(taskToDomain);
        }
        return Sdk.CLIENTS.getWorkflowClient().startWorkflow(request);
    }

    /** Runs a workflow of just ``taskName`` (as ``ref``, no input) until it has ``status``. */
    static Workflow runAlone(String taskName, String ref, Workflow.WorkflowStatus status) {
        String id = start(register(taskName + "_wf", List.of(simple(taskName, ref, Map.of()))), Map.of(), null);
        return Sdk.awaitStatus(id, status);
    }

    static List<Task> attempts(Workflow wf, String ref) {
        return wf.getTasks().stream().filter(t -> t.getReferenceTaskName().equals(ref)).toList();
    }

    @Test
    void threadCountRunsTasksInParallel() {
        WorkflowTask fork = new WorkflowTask();
        fork.setType("FORK_JOIN");
        fork.setName("fork");
        fork.setTaskReferenceName("fork");
        fork.setForkTasks(List.of(List.of(simple(PARALLEL, "p1", Map.of())), List.of(simple(PARALLEL, "p2", Map.of())),
                List.of(simple(PARALLEL, "p3", Map.of()))));
        WorkflowTask join = new WorkflowTask();
        join.setType("JOIN");
        join.setName("join");
        join.setTaskReferenceName("join");
        join.setJoinOn(List.of("p1", "p2", "p3"));
        String id = start(register("java_w_parallel_wf", List.of(fork, join)), Map.of(), null);
        Workflow wf = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);
        // three threads for the task: two executions were inside execute() at the same time
        assertTrue(maxInside.get() >= 2 && maxInside.get() <= 3, "max concurrent executions: " + maxInside.get());
        assertEquals(Boolean.TRUE, attempts(wf, "p1").get(0).getOutputData().get("together"));
        assertTrue(attempts(wf, "p1").get(0).getWorkerId() != null);
    }

    @Test
    void taskLogsAndOutput() {
        String id = start(register("java_w_logging_wf",
                List.of(simple(LOGGING, "log", Map.of("item", "${workflow.input.item}")))), Map.of("item", "book"), null);
        Workflow wf = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);
        Task task = attempts(wf, "log").get(0);
        assertEquals("book", task.getOutputData().get("item"));
        List<String> logs = TASKS.getTaskLogs(task.getTaskId()).stream().map(TaskExecLog::getLog).toList();
        assertEquals(List.of("starting book", "done"), logs);
    }

    @Test
    void callbackAfterSeconds() {
        Workflow wf = runAlone(CALLBACK, "cb", Workflow.WorkflowStatus.COMPLETED);
        List<Task> tasks = attempts(wf, "cb");
        assertEquals(1, tasks.size(), "IN_PROGRESS with a callback is the same task, not a retry");
        assertEquals(2, tasks.get(0).getPollCount());
        assertEquals(2, ((Number) tasks.get(0).getOutputData().get("checks")).intValue());
    }

    @Test
    void retriesThenSuccess() {
        Workflow wf = runAlone(FLAKY, "flaky", Workflow.WorkflowStatus.COMPLETED);
        List<Task> tasks = attempts(wf, "flaky");
        assertEquals(List.of(Task.Status.FAILED, Task.Status.FAILED, Task.Status.COMPLETED),
                tasks.stream().map(Task::getStatus).toList());
        assertEquals(List.of(0, 1, 2), tasks.stream().map(Task::getRetryCount).toList());
        assertEquals("attempt 0 failed", tasks.get(0).getReasonForIncompletion());
        assertEquals(tasks.get(0).getTaskId(), tasks.get(1).getRetriedTaskId());
    }

    @Test
    void failedWithTerminalErrorIsNotRetried() {
        Workflow wf = runAlone(TERMINAL, "charge", Workflow.WorkflowStatus.FAILED);
        List<Task> tasks = attempts(wf, "charge");
        assertEquals(1, tasks.size(), "retryCount 3 in the definition, but a terminal error is final");
        assertEquals(Task.Status.FAILED_WITH_TERMINAL_ERROR, tasks.get(0).getStatus());
        assertEquals("card declined: no retry", tasks.get(0).getReasonForIncompletion());
        assertTrue(wf.getReasonForIncompletion().contains("card declined"), wf.getReasonForIncompletion());
    }

    @Test
    void anExceptionFailsTheTask() {
        Workflow wf = runAlone(THROWING, "boom", Workflow.WorkflowStatus.FAILED);
        Task task = attempts(wf, "boom").get(0);
        assertEquals(Task.Status.FAILED, task.getStatus());
        assertTrue(task.getReasonForIncompletion().contains("worker blew up"), task.getReasonForIncompletion());
        // the runner also sends the stack trace as a task log
        assertTrue(TASKS.getTaskLogs(task.getTaskId()).stream().anyMatch(l -> l.getLog().contains("worker blew up")));
    }

    @Test
    void domainWorkerPollsOnlyItsDomain() {
        String name = register("java_w_domain_wf", List.of(simple(DOMAIN, "d", Map.of())));
        String id = start(name, Map.of(), Map.of(DOMAIN, "java_green"));
        Workflow wf = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);
        Task task = attempts(wf, "d").get(0);
        assertEquals("java_green", task.getDomain());
        assertEquals("java_green", task.getOutputData().get("domain"));

        // without the domain the task waits in the default queue, which nobody polls
        String other = start(name, Map.of(), null);
        Sdk.sleep(1500);
        Workflow waiting = Sdk.CLIENTS.getWorkflowClient().getWorkflow(other, true);
        assertEquals(Task.Status.SCHEDULED, attempts(waiting, "d").get(0).getStatus());
        assertTrue(TASKS.getQueueSizeForTask(DOMAIN) >= 1);
        Sdk.CLIENTS.getWorkflowClient().terminateWorkflow(other, "test over");
    }

    @Test
    void updateV2RunsTheNextTask() {
        String id = start(register("java_w_v2_wf", List.of(simple(V2_FIRST, "first", Map.of("n", "${workflow.input.n}")),
                simple(V2_SECOND, "second", Map.of("n", "${first.output.n}")))), Map.of("n", 4), null);
        Workflow wf = Sdk.awaitStatus(id, Workflow.WorkflowStatus.COMPLETED);
        assertEquals(50, ((Number) attempts(wf, "second").get(0).getOutputData().get("n")).intValue());
    }
}
