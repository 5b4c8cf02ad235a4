package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import com.netflix.conductor.client.exception.ConductorClientException;
import com.netflix.conductor.common.metadata.workflow.StartWorkflowRequest;

import io.orkes.conductor.client.SchedulerClient;
import io.orkes.conductor.client.model.SaveScheduleRequest;
import io.orkes.conductor.client.model.WorkflowSchedule;

/** The scheduler client: save, get, list, pause, resume, next run times, delete. */
class SchedulerTest {
    final SchedulerClient scheduler = Sdk.CLIENTS.getSchedulerClient();

    @Test
    void scheduleLifecycle() {
        String workflow = WorkersTest.register("java_sched_wf", List.of(TaskClientTest.waitTask("w")));
        String name = Sdk.unique("java_schedule");
        StartWorkflowRequest start = new StartWorkflowRequest();
        start.setName(workflow);
        start.setVersion(1);
        start.setInput(Map.of("from", "schedule"));
        SaveScheduleRequest save = new SaveScheduleRequest();
        save.setName(name);
        save.setCronExpression("0 0 3 * * ?");
        save.setZoneId("UTC");
        save.setPaused(true);
        save.setStartWorkflowRequest(start);
        save.setDescription("nightly at 03:00 UTC");
        scheduler.saveSchedule(save);

        WorkflowSchedule got = scheduler.getSchedule(name);
        assertEquals("0 0 3 * * ?", got.getCronExpression());
        assertEquals(workflow, got.getStartWorkflowRequest().getName());
        assertEquals(Boolean.TRUE, got.isPaused());
        assertTrue(scheduler.getAllSchedules(workflow).stream().anyMatch(s -> s.getName().equals(name)));

        scheduler.resumeSchedule(name);
        assertEquals(Boolean.FALSE, scheduler.getSchedule(name).isPaused());
        scheduler.pauseSchedule(name);
        assertEquals(Boolean.TRUE, scheduler.getSchedule(name).isPaused());

        long day = 24L * 3600 * 1000;
        long from = 1_800_000_000_000L - (1_800_000_000_000L % day);
        List<Long> next = scheduler.getNextFewSchedules("0 0 3 * * ?", from, from + 10 * day, 3);
        assertEquals(List.of(from + 3 * 3600_000L, from + day + 3 * 3600_000L, from + 2 * day + 3 * 3600_000L), next);

        scheduler.deleteSchedule(name);
        ConductorClientException gone = assertThrows(ConductorClientException.class, () -> scheduler.getSchedule(name));
        assertEquals(404, gone.getStatus());
    }
}
