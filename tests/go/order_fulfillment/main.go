// Order fulfillment with the official Go SDK: three workers (fetch the order, charge it,
// ship it) chained in a workflow built in code, run once asynchronously and once
// synchronously.  CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api go run ./order_fulfillment
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/conductor-sdk/conductor-go/sdk/client"
	"github.com/conductor-sdk/conductor-go/sdk/model"
	"github.com/conductor-sdk/conductor-go/sdk/worker"
	"github.com/conductor-sdk/conductor-go/sdk/workflow"
	"github.com/conductor-sdk/conductor-go/sdk/workflow/executor"
)

func fetchOrder(task *model.Task) (interface{}, error) {
	return map[string]interface{}{"order_id": task.InputData["order_id"], "amount": 99.99, "item": "Widget"}, nil
}

func processPayment(task *model.Task) (interface{}, error) {
	return map[string]interface{}{"transaction_id": "txn_abc123", "status": "charged"}, nil
}

func shipOrder(task *model.Task) (interface{}, error) {
	return map[string]interface{}{"tracking": "TRACK-456", "carrier": "FedEx"}, nil
}

func main() {
	// Reads CONDUCTOR_SERVER_URL, and CONDUCTOR_AUTH_KEY/CONDUCTOR_AUTH_SECRET when set.
	apiClient := client.NewAPIClientFromEnv()
	workflowExecutor := executor.NewWorkflowExecutor(apiClient)

	wf := workflow.NewConductorWorkflow(workflowExecutor).Name("order_fulfillment").Version(1).
		Add(workflow.NewSimpleTask("fetch_order", "fetch").
			Input("order_id", "${workflow.input.order_id}")).
		Add(workflow.NewSimpleTask("process_payment", "pay").
			Input("order_id", "${workflow.input.order_id}").
			Input("amount", "${fetch.output.amount}")).
		Add(workflow.NewSimpleTask("ship_order", "ship").
			Input("order_id", "${workflow.input.order_id}").
			Input("transaction_id", "${pay.output.transaction_id}")).
		OutputParameters(map[string]interface{}{
			"tracking":       "${ship.output.tracking}",
			"transaction_id": "${pay.output.transaction_id}",
		})
	// The deploy step: register the definition unless the server has it (409), so what
	// `make run` loaded, or an operator changed, is left alone.
	if err := wf.Register(false); err != nil {
		var apiErr client.GenericSwaggerError
		if !errors.As(err, &apiErr) || apiErr.StatusCode() != 409 {
			fmt.Println("register:", err)
			os.Exit(1)
		}
	}

	// One poller per task type: batch size 1, poll every 100 ms.
	runner := worker.NewTaskRunnerWithApiClient(apiClient)
	runner.StartWorker("fetch_order", fetchOrder, 1, 100*time.Millisecond)
	runner.StartWorker("process_payment", processPayment, 1, 100*time.Millisecond)
	runner.StartWorker("ship_order", shipOrder, 1, 100*time.Millisecond)

	// Asynchronous: returns the workflow id at once; the monitor reports the end.
	id, err := workflowExecutor.StartWorkflow(&model.StartWorkflowRequest{
		Name: "order_fulfillment", Version: 1, Input: map[string]interface{}{"order_id": "ORD-123"},
	})
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	fmt.Println("Started:", id)
	channel, _ := workflowExecutor.MonitorExecution(id)
	started, err := executor.WaitForWorkflowCompletionUntilTimeout(channel, 60*time.Second)
	if err != nil {
		fmt.Println("wait:", err)
		os.Exit(1)
	}
	fmt.Println("Status:", started.Status, started.Output)

	// Synchronous: starts the workflow and blocks until it completes.
	run, err := workflowExecutor.ExecuteWorkflow(&model.StartWorkflowRequest{
		Name: "order_fulfillment", Version: 1, Input: map[string]interface{}{"order_id": "ORD-789"},
	}, "")
	if err != nil {
		fmt.Println("execute:", err)
		os.Exit(1)
	}
	fmt.Println("Status:", run.Status, run.Output)
	if started.Status != model.CompletedWorkflow || run.Status != model.CompletedWorkflow {
		os.Exit(1)
	}
}
