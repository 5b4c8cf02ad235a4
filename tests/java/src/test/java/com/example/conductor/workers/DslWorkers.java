package com.example.conductor.workers;

import java.util.Map;

import com.netflix.conductor.sdk.workflow.task.InputParam;
import com.netflix.conductor.sdk.workflow.task.WorkerTask;

/**
 * Annotated workers, found by {@code WorkflowExecutor.initWorkers("com.example.conductor.workers")}
 * as the SDK's users declare them: one method per task type, inputs bound by name.
 */
public class DslWorkers {

    @WorkerTask(value = "java_dsl_greet", threadCount = 2, pollingInterval = 100)
    public Map<String, Object> greet(@InputParam("name") String name) {
        return Map.of("greeting", "Hello, " + name);
    }

    @WorkerTask(value = "java_dsl_shout", pollingInterval = 100)
    public Map<String, Object> shout(@InputParam("text") String text) {
        return Map.of("text", text.toUpperCase());
    }

    @WorkerTask(value = "java_dsl_domain", pollingInterval = 100, domain = "java_blue")
    public Map<String, Object> inDomain(@InputParam("n") Integer n) {
        return Map.of("n", n + 1);
    }
}
