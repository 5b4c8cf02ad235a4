package com.example.orders;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import com.netflix.conductor.client.exception.ConductorClientException;
import com.netflix.conductor.common.run.Workflow;
import com.netflix.conductor.sdk.workflow.def.ConductorWorkflow;
import com.netflix.conductor.sdk.workflow.def.tasks.SimpleTask;
import com.netflix.conductor.sdk.workflow.executor.WorkflowExecutor;
import com.netflix.conductor.sdk.workflow.task.InputParam;
import com.netflix.conductor.sdk.workflow.task.WorkerTask;

import io.orkes.conductor.client.ApiClient;

// Order fulfillment with the official Java SDK: three annotated workers chained in a
// workflow built in code, executed once.  CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
public class OrderFulfillment {

    @WorkerTask(value = "fetch_order", pollingInterval = 100)
    public Map<String, Object> fetchOrder(@InputParam("order_id") String orderId) {
        return Map.of("order_id", orderId, "amount", 99.99, "item", "Widget");
    }

    @WorkerTask(value = "process_payment", pollingInterval = 100)
    public Map<String, Object> processPayment(@InputParam("amount") Double amount) {
        return Map.of("transaction_id", "txn_abc123", "status", "charged");
    }

    @WorkerTask(value = "ship_order", pollingInterval = 100)
    public Map<String, Object> shipOrder(@InputParam("transaction_id") String transactionId) {
        return Map.of("tracking", "TRACK-456", "carrier", "FedEx");
    }

    public static void main(String[] args) throws Exception {
        // new ApiClient() reads CONDUCTOR_SERVER_URL, and CONDUCTOR_AUTH_KEY/CONDUCTOR_AUTH_SECRET
        WorkflowExecutor executor = new WorkflowExecutor(new ApiClient(), 100);
        executor.initWorkersFromInstances(List.of(new OrderFulfillment()));

        ConductorWorkflow<Map<String, Object>> workflow = new ConductorWorkflow<>(executor);
        workflow.setName("order_fulfillment");
        workflow.setVersion(1);
        workflow.add(new SimpleTask("fetch_order", "fetch").input("order_id", "${workflow.input.order_id}"));
        workflow.add(new SimpleTask("process_payment", "pay")
                .input("order_id", "${workflow.input.order_id}", "amount", "${fetch.output.amount}"));
        workflow.add(new SimpleTask("ship_order", "ship")
                .input("order_id", "${workflow.input.order_id}", "transaction_id", "${pay.output.transaction_id}"));
        workflow.setWorkflowOutput(Map.of(
                "tracking", "${ship.output.tracking}", "transaction_id", "${pay.output.transaction_id}"));
        // The deploy step: register the definition (and missing task definitions) only when the
        // server lacks it, so what `make run` loaded, or an operator changed, is left alone.
        try {
            executor.getMetadataClient().getWorkflowDef("order_fulfillment", 1);
        } catch (ConductorClientException e) {
            if (e.getStatus() != 404) {
                throw e;
            }
            workflow.registerWorkflow(false, true);
        }

        try {
            Workflow run = workflow.execute(Map.of("order_id", "ORD-123")).get(30, TimeUnit.SECONDS);
            System.out.println("Status: " + run.getStatus() + " " + run.getOutput());
            if (run.getStatus() != Workflow.WorkflowStatus.COMPLETED) {
                throw new IllegalStateException(run.getReasonForIncompletion());
            }
        } finally {
            executor.shutdown();
        }
    }
}
