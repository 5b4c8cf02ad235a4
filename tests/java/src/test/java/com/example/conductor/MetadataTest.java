package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import com.netflix.conductor.client.exception.ConductorClientException;
import com.netflix.conductor.common.metadata.tasks.TaskDef;
import com.netflix.conductor.common.metadata.workflow.WorkflowDef;
import com.netflix.conductor.common.metadata.workflow.WorkflowTask;

import io.orkes.conductor.client.http.OrkesMetadataClient;
import io.orkes.conductor.client.model.TagObject;
import io.orkes.conductor.client.model.TagString;

/** MetadataClient: task and workflow definitions, their versions, and tags. */
class MetadataTest {
    private final OrkesMetadataClient metadata = Sdk.CLIENTS.getMetadataClient();

    @Test
    void taskDefinitions() {
        String name = Sdk.unique("java_meta_task");
        TaskDef def = new TaskDef(name, "made by the Java SDK", "dev@example.com", 3, 120, 60);
        def.setRetryDelaySeconds(2);
        def.setInputKeys(List.of("orderId"));
        metadata.registerTaskDefs(List.of(def));

        TaskDef got = metadata.getTaskDef(name);
        assertEquals(name, got.getName());
        assertEquals(3, got.getRetryCount());
        assertEquals(120, got.getTimeoutSeconds());
        assertEquals(60, got.getResponseTimeoutSeconds());
        assertEquals(List.of("orderId"), got.getInputKeys());

        got.setRetryCount(5);
        metadata.updateTaskDef(got);
        assertEquals(5, metadata.getTaskDef(name).getRetryCount());
        assertTrue(metadata.getAllTaskDefs().stream().anyMatch(t -> t.getName().equals(name)));

        metadata.unregisterTaskDef(name);
        ConductorClientException e = assertThrows(ConductorClientException.class, () -> metadata.getTaskDef(name));
        assertEquals(404, e.getStatus());
    }

    @Test
    void workflowDefinitionsAndVersions() {
        String name = Sdk.unique("java_meta_wf");
        WorkflowDef v1 = workflowDef(name, 1);
        metadata.registerWorkflowDef(v1);
        WorkflowDef v2 = workflowDef(name, 2);
        v2.setDescription("second version");
        metadata.updateWorkflowDefs(List.of(v2));

        assertEquals(1, metadata.getWorkflowDef(name, 1).getVersion());
        WorkflowDef latest = metadata.getWorkflowDef(name, null);
        assertEquals(2, latest.getVersion());
        assertEquals("second version", latest.getDescription());
        assertEquals("noop", latest.getTasks().get(0).getTaskReferenceName());
        assertTrue(metadata.getAllWorkflowsWithLatestVersions().stream()
                .anyMatch(w -> w.getName().equals(name) && w.getVersion() == 2));

        // registering an existing name+version again without overwrite is a conflict
        ConductorClientException conflict = assertThrows(ConductorClientException.class,
                () -> metadata.registerWorkflowDef(workflowDef(name, 2), false));
        assertEquals(409, conflict.getStatus());

        metadata.unregisterWorkflowDef(name, 2);
        assertEquals(1, metadata.getWorkflowDef(name, null).getVersion());
        ConductorClientException missing = assertThrows(ConductorClientException.class,
                () -> metadata.getWorkflowDef(name, 2));
        assertEquals(404, missing.getStatus());
        metadata.unregisterWorkflowDef(name, 1);
    }

    @Test
    void tags() {
        String wf = Sdk.unique("java_meta_tagged");
        metadata.registerWorkflowDef(workflowDef(wf, 1));
        String task = Sdk.unique("java_meta_tagged_task");
        metadata.registerTaskDefs(List.of(new TaskDef(task)));

        // (setWorkflowTags is left out: SDK 6.0.0 sends it as a GET, so it changes nothing)
        metadata.addWorkflowTag(tag("team", "payments"), wf);
        metadata.addWorkflowTag(tag("region", "eu"), wf);
        assertEquals(Map.of("team", "payments", "region", "eu"), asMap(metadata.getWorkflowTags(wf)));
        metadata.deleteWorkflowTag(tag("team", "payments"), wf);
        assertEquals(Map.of("region", "eu"), asMap(metadata.getWorkflowTags(wf)));

        metadata.setTaskTags(List.of(tag("owner", "ops"), tag("cost", "low")), task);
        metadata.addTaskTag(tag("tier", "gold"), task);
        assertEquals(Map.of("owner", "ops", "cost", "low", "tier", "gold"), asMap(metadata.getTaskTags(task)));
        TagString cost = new TagString();
        cost.setKey("cost");
        cost.setValue("low");
        metadata.deleteTaskTag(cost, task);
        assertEquals(Map.of("owner", "ops", "tier", "gold"), asMap(metadata.getTaskTags(task)));
        assertTrue(metadata.getTags().stream().anyMatch(t -> "region".equals(t.getKey())));
    }

    static TagObject tag(String key, String value) {
        TagObject tag = new TagObject();
        tag.setKey(key);
        tag.setValue(value);
        return tag;
    }

    static Map<String, Object> asMap(List<TagObject> tags) {
        return tags.stream().collect(Collectors.toMap(TagObject::getKey, TagObject::getValue));
    }

    static WorkflowDef workflowDef(String name, int version) {
        WorkflowTask noop = new WorkflowTask();
        noop.setName("noop");
        noop.setTaskReferenceName("noop");
        noop.setType("NOOP");
        WorkflowDef def = new WorkflowDef();
        def.setName(name);
        def.setVersion(version);
        def.setOwnerEmail("dev@example.com");
        def.setTasks(List.of(noop));
        def.setTimeoutSeconds(0);
        return def;
    }
}
