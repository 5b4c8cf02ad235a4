package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import org.junit.jupiter.api.Test;

/**
 * Not a scenario (no server needed): {@code make java-sdk} runs only this class
 * ({@code -Dtest=SdkOnClasspath}), so that surefire resolves its JUnit provider and the
 * e2e run can be offline; it also proves the SDK's classes load on this JDK.
 */
class SdkOnClasspath {
    @Test
    void sdkClassesLoad() throws ClassNotFoundException {
        assertNotNull(Class.forName("io.orkes.conductor.client.ApiClient"));
        assertNotNull(Class.forName("com.netflix.conductor.sdk.workflow.def.ConductorWorkflow"));
        assertNotNull(Class.forName("com.netflix.conductor.client.automator.TaskRunnerConfigurer"));
    }
}
