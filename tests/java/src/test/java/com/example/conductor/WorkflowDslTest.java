package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.netflix.conductor.common.metadata.workflow.StartWorkflowRequest;
import com.netflix.conductor.common.metadata.workflow.WorkflowDef;
import com.netflix.conductor.common.run.Workflow;
import com.netflix.conductor.sdk.workflow.def.ConductorWorkflow;
import com.netflix.conductor.sdk.workflow.def.tasks.DoWhile;
import com.netflix.conductor.sdk.workflow.def.tasks.DynamicFork;
import com.netflix.conductor.sdk.workflow.def.tasks.ForkJoin;
import com.netflix.conductor.sdk.workflow.def.tasks.Http;
import com.netflix.conductor.sdk.workflow.def.tasks.JQ;
import com.netflix.conductor.sdk.workflow.def.tasks.Javascript;
import com.netflix.conductor.sdk.workflow.def.tasks.SetVariable;
import com.netflix.conductor.sdk.workflow.def.tasks.SimpleTask;
import com.netflix.conductor.sdk.workflow.def.tasks.SubWorkflow;
import com.netflix.conductor.sdk.workflow.def.tasks.Switch;
import com.netflix.conductor.sdk.workflow.def.tasks.Task;
import com.netflix.conductor.sdk.workflow.def.tasks.Terminate;
import com.netflix.conductor.sdk.workflow.def.tasks.Wait;
import com.netflix.conductor.sdk.workflow.executor.WorkflowExecutor;

/**
 * The workflow builder DSL: ConductorWorkflow with every common task type, registerWorkflow,
 * executeWorkflow; the SIMPLE tasks run on annotated @WorkerTask workers.
 */
class WorkflowDslTest {
    static WorkflowExecutor executor;

    @BeforeAll
    static void startWorkers() {
        executor = new WorkflowExecutor(Sdk.CLIENT, 100);
        executor.initWorkers("com.example.conductor.workers");
    }

    @AfterAll
    static void stopWorkers() {
        executor.shutdown();
    }

    private static ConductorWorkflow<Map<String, Object>> newWorkflow(String name) {
        ConductorWorkflow<Map<String, Object>> wf = new ConductorWorkflow<>(executor);
        wf.setName(name);
        wf.setVersion(1);
        wf.setOwnerEmail("dev@example.com");
        wf.setDescription("built with the Java SDK's DSL");
        return wf;
    }

    @Test
    void everyTaskTypeRegisteredAndExecuted() throws Exception {
        String childName = Sdk.unique("java_dsl_child");
        ConductorWorkflow<Map<String, Object>> child = newWorkflow(childName);
        child.add(new SimpleTask("java_dsl_shout", "shout").input("text", "${workflow.input.text}"));
        child.setWorkflowOutput(Map.of("text", "${shout.output.text}"));
        assertTrue(child.registerWorkflow(true, true));

        String name = Sdk.unique("java_dsl_all");
        ConductorWorkflow<Map<String, Object>> wf = newWorkflow(name);
        wf.add(new SimpleTask("java_dsl_greet", "greet").input("name", ConductorWorkflow.input.get("name")));
        wf.add(new SetVariable("remember").input("greeting", "${greet.output.greeting}"));
        wf.add(new Switch("route", "${workflow.input.size}")
                .switchCase("big", new Javascript("double_js", "(function () { return $.amount * 2; })()")
                        .input("amount", "${workflow.input.amount}"))
                .defaultCase(new JQ("double_jq", "{doubled: (.amount * 2)}").input("amount", "${workflow.input.amount}")));
        wf.add(new ForkJoin("fork",
                new Task[] {new SimpleTask("java_dsl_shout", "left").input("text", "left")},
                new Task[] {new SimpleTask("java_dsl_shout", "right").input("text", "right")}));
        wf.add(new DoWhile("loop", 3, new JQ("tick", "{i: .i}").input("i", "${loop.output.iteration}")));
        wf.add(new SubWorkflow("child", childName, 1).input("text", "${greet.output.greeting}"));
        wf.add(new Http("health").url(Sdk.serverRoot() + "/api/health"));
        wf.add(new Wait("pause", Duration.ofSeconds(1)));
        wf.add(new Javascript("plan", "(function () { return {tasks: [{name: 'java_dsl_shout', taskReferenceName: 'dyn_a', type: 'SIMPLE'},"
                + " {name: 'java_dsl_shout', taskReferenceName: 'dyn_b', type: 'SIMPLE'}],"
                + " inputs: {dyn_a: {text: 'a'}, dyn_b: {text: 'b'}}}; })()"));
        wf.add(new DynamicFork("dyn", "${plan.output.result.tasks}", "${plan.output.result.inputs}"));
        wf.setWorkflowOutput(Map.of(
                "greeting", "${workflow.variables.greeting}",
                "js", "${double_js.output.result}",
                "jq", "${double_jq.output.result.doubled}",
                "left", "${left.output.text}",
                "right", "${right.output.text}",
                "iterations", "${loop.output.iteration}",
                "child", "${child.output.text}",
                "health", "${health.output.response.statusCode}",
                "dynB", "${dyn_b.output.text}"));
        assertTrue(wf.registerWorkflow(true, true));

        WorkflowDef registered = Sdk.CLIENTS.getMetadataClient().getWorkflowDef(name, 1);
        assertEquals(List.of("SIMPLE", "SET_VARIABLE", "SWITCH", "FORK_JOIN", "JOIN", "DO_WHILE", "SUB_WORKFLOW",
                        "HTTP", "WAIT", "INLINE", "FORK_JOIN_DYNAMIC", "JOIN"),
                registered.getTasks().stream().map(t -> t.getType()).toList());

        Workflow small = wf.execute(Map.of("name", "Ada", "size", "small", "amount", 21)).get(90, TimeUnit.SECONDS);
        assertEquals(Workflow.WorkflowStatus.COMPLETED, small.getStatus(), small.getReasonForIncompletion());
        Map<String, Object> out = small.getOutput();
        assertEquals("Hello, Ada", out.get("greeting"));
        assertEquals(42, ((Number) out.get("jq")).intValue());
        assertEquals(null, out.get("js"));
        assertEquals("LEFT", out.get("left"));
        assertEquals("RIGHT", out.get("right"));
        assertEquals(3, ((Number) out.get("iterations")).intValue());
        assertEquals("HELLO, ADA", out.get("child"));
        assertEquals(200, ((Number) out.get("health")).intValue());
        assertEquals("B", out.get("dynB"));

        // executeWorkflow by name and version, through the executor
        Workflow big = executor.executeWorkflow(name, 1, Map.of("name", "Bo", "size", "big", "amount", 5))
                .get(90, TimeUnit.SECONDS);
        assertEquals(Workflow.WorkflowStatus.COMPLETED, big.getStatus(), big.getReasonForIncompletion());
        assertEquals(10, ((Number) big.getOutput().get("js")).intValue());
    }

    @Test
    void terminateInsideASwitch() throws Exception {
        String name = Sdk.unique("java_dsl_terminate");
        ConductorWorkflow<Map<String, Object>> wf = newWorkflow(name);
        wf.add(new Switch("check", "${workflow.input.ok}")
                .switchCase("no", new Terminate("stop", Workflow.WorkflowStatus.FAILED, "input was not ok",
                        Map.of("why", "${workflow.input.ok}")))
                .defaultCase(new SimpleTask("java_dsl_greet", "greet").input("name", "ok")));
        wf.add(new SimpleTask("java_dsl_shout", "after").input("text", "unreached"));
        assertTrue(wf.registerWorkflow(true, true));

        Workflow stopped = wf.execute(Map.of("ok", "no")).get(60, TimeUnit.SECONDS);
        assertEquals(Workflow.WorkflowStatus.FAILED, stopped.getStatus());
        assertEquals("input was not ok", stopped.getReasonForIncompletion());
        assertTrue(stopped.getTasks().stream().noneMatch(t -> t.getReferenceTaskName().equals("after")));
    }

    @Test
    void executeWorkflowSynchronously() throws Exception {
        String name = Sdk.unique("java_dsl_sync");
        ConductorWorkflow<Map<String, Object>> wf = newWorkflow(name);
        wf.add(new SimpleTask("java_dsl_greet", "greet").input("name", "${workflow.input.name}"));
        wf.add(new SimpleTask("java_dsl_domain", "blue").input("n", 41));
        wf.setWorkflowOutput(Map.of("greeting", "${greet.output.greeting}", "n", "${blue.output.n}"));
        assertTrue(wf.registerWorkflow(true, true));

        // the server's /workflow/execute: it answers when the run completes (or waitForSeconds passes)
        StartWorkflowRequest request = new StartWorkflowRequest();
        request.setName(name);
        request.setVersion(1);
        request.setInput(Map.of("name", "Cy"));
        request.setTaskToDomain(Map.of("java_dsl_domain", "java_blue"));
        var run = Sdk.CLIENTS.getWorkflowClient().executeWorkflow(request, (String) null, 30).get(60, TimeUnit.SECONDS);
        assertEquals(Workflow.WorkflowStatus.COMPLETED, run.getStatus());
        assertEquals("Hello, Cy", run.getOutput().get("greeting"));
        assertEquals(42, ((Number) run.getOutput().get("n")).intValue());
        Workflow done = Sdk.CLIENTS.getWorkflowClient().getWorkflow(run.getWorkflowId(), true);
        assertEquals("java_blue", done.getTasks().stream().filter(t -> t.getReferenceTaskName().equals("blue"))
                .findFirst().orElseThrow().getDomain());
    }
}
