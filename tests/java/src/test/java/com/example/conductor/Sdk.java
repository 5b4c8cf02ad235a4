package com.example.conductor;

import java.time.Duration;
import java.util.UUID;
import java.util.function.Predicate;

import com.netflix.conductor.client.http.ConductorClient;
import com.netflix.conductor.common.run.Workflow;

import io.orkes.conductor.client.ApiClient;
import io.orkes.conductor.client.OrkesClients;
import io.orkes.conductor.client.http.OrkesWorkflowClient;

/**
 * The SDK configured as its users configure it: {@code new ApiClient()} reads
 * CONDUCTOR_SERVER_URL (the base URL ending in /api), CONDUCTOR_AUTH_KEY and
 * CONDUCTOR_AUTH_SECRET from the environment and signs in with that access key.
 */
final class Sdk {
    static final ConductorClient CLIENT = new ApiClient();
    static final OrkesClients CLIENTS = new OrkesClients(CLIENT);

    private Sdk() {
    }

    /** The server's base URL without the trailing /api (for HTTP tasks that call it back). */
    static String serverRoot() {
        return System.getenv("CONDUCTOR_SERVER_URL").replaceAll("/api/?$", "");
    }

    /** {@code base} with a random suffix: every run registers its own definitions. */
    static String unique(String base) {
        return base + "_" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Polls getWorkflow (with tasks) until {@code done} holds, for at most {@code timeout}. */
    static Workflow await(String workflowId, Duration timeout, Predicate<Workflow> done) {
        OrkesWorkflowClient workflows = CLIENTS.getWorkflowClient();
        long deadline = System.nanoTime() + timeout.toNanos();
        Workflow wf = workflows.getWorkflow(workflowId, true);
        while (!done.test(wf)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("workflow " + workflowId + " did not reach the expected state within "
                        + timeout + "; it is " + wf.getStatus() + " with tasks "
                        + wf.getTasks().stream().map(t -> t.getReferenceTaskName() + ":" + t.getStatus()).toList());
            }
            sleep(200);
            wf = workflows.getWorkflow(workflowId, true);
        }
        return wf;
    }

    /** Waits until the workflow has the given status. */
    static Workflow awaitStatus(String workflowId, Workflow.WorkflowStatus status) {
        return await(workflowId, Duration.ofSeconds(60), wf -> wf.getStatus() == status);
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
