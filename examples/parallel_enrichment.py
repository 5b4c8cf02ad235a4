"""Parallel enrichment: the FORK/JOIN example of the "dynamic workflows in Python" article.

Three independent checks of a customer (credit, fraud, KYC) run in parallel branches of
a ``ForkTask``; a ``JoinTask`` waits for all three and ``make_decision`` merges their
outputs into one decision, the workflow's output.

    make run                                   # server on http://127.0.0.1:8080
    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    python examples/parallel_enrichment.py

``main()`` starts the workers, registers ``parallel_enrichment`` v1 and decides for two
customers synchronously with ``executor.execute``.

No ``from __future__ import annotations`` here: the SDK maps task input to worker
arguments by their annotations and needs real types, not strings.
"""
import sys

from conductor.client.automator.task_handler import TaskHandler
from conductor.client.configuration.configuration import Configuration
from conductor.client.orkes_clients import OrkesClients
from conductor.client.worker.worker_task import worker_task
from conductor.client.workflow.conductor_workflow import ConductorWorkflow
from conductor.client.workflow.executor.workflow_executor import WorkflowExecutor
from conductor.client.workflow.task.fork_task import ForkTask
from conductor.client.workflow.task.join_task import JoinTask

try:  # imported from the repository root (the tests), or run as python examples/<name>.py
    from examples.registration import register_unless_present
except ImportError:
    from registration import register_unless_present

WORKFLOW_NAME = "parallel_enrichment"
WORKFLOW_VERSION = 1
MIN_CREDIT_SCORE = 650

# What the three bureaus know (a stand-in for real services); anyone else gets the defaults.
CREDIT_SCORES = {"CUST-42": 742, "CUST-7": 580}
FRAUD_RISK = {"CUST-13": "high"}
KYC_STATUS = {"CUST-99": "pending"}


@worker_task(task_definition_name="check_credit")
def check_credit(customer_id: str) -> dict:
    return {"score": CREDIT_SCORES.get(customer_id, 700), "bureau": "acme-credit"}


@worker_task(task_definition_name="check_fraud")
def check_fraud(customer_id: str) -> dict:
    return {"risk_level": FRAUD_RISK.get(customer_id, "low")}


@worker_task(task_definition_name="check_kyc")
def check_kyc(customer_id: str) -> dict:
    return {"status": KYC_STATUS.get(customer_id, "verified")}


@worker_task(task_definition_name="make_decision")
def make_decision(credit_score: int, fraud_risk: str, kyc_status: str) -> dict:
    reasons = []
    if credit_score is None or credit_score < MIN_CREDIT_SCORE:
        reasons.append(f"credit score {credit_score} below {MIN_CREDIT_SCORE}")
    if fraud_risk != "low":
        reasons.append(f"fraud risk {fraud_risk}")
    if kyc_status != "verified":
        reasons.append(f"KYC {kyc_status}")
    return {
        "result": {
            "approved": not reasons,
            "reasons": reasons,
            "credit_score": credit_score,
            "fraud_risk": fraud_risk,
            "kyc_status": kyc_status,
        }
    }


def parallel_enrichment_workflow(executor: WorkflowExecutor, register: bool = True) -> ConductorWorkflow:
    """Build ``parallel_enrichment`` v1 (fork of three checks >> join >> decide) and register it."""
    workflow = ConductorWorkflow(name=WORKFLOW_NAME, version=WORKFLOW_VERSION, executor=executor)

    # Define independent tasks
    credit_check = check_credit(task_ref_name="credit", customer_id=workflow.input("customer_id"))
    fraud_check = check_fraud(task_ref_name="fraud", customer_id=workflow.input("customer_id"))
    kyc_check = check_kyc(task_ref_name="kyc", customer_id=workflow.input("customer_id"))

    # Fork runs all branches in parallel
    fork = ForkTask(
        task_ref_name="parallel_checks",
        forked_tasks=[
            [credit_check],
            [fraud_check],
            [kyc_check],
        ],
    )

    # Join waits for all branches
    join = JoinTask(task_ref_name="wait_all", join_on=["credit", "fraud", "kyc"])

    # Merge results
    decide = make_decision(
        task_ref_name="decide",
        credit_score=credit_check.output("score"),
        fraud_risk=fraud_check.output("risk_level"),
        kyc_status=kyc_check.output("status"),
    )

    workflow >> fork >> join >> decide
    workflow.output_parameters({"decision": decide.output("result")})
    if register:
        register_unless_present(executor, workflow)
    return workflow


def main() -> int:
    config = Configuration()  # CONDUCTOR_SERVER_URL, default http://localhost:8080/api
    clients = OrkesClients(configuration=config)
    executor = clients.get_workflow_executor()

    task_handler = TaskHandler(workers=[], configuration=config, scan_for_annotated_workers=True)
    task_handler.start_processes()
    statuses = []
    try:
        parallel_enrichment_workflow(executor)
        for customer_id in ("CUST-42", "CUST-13"):
            # Synchronous: block until the execution ends and get its result. The workers
            # poll for the first time a few seconds after start_processes(), hence a
            # longer wait than the default 10 s.
            run = executor.execute(name=WORKFLOW_NAME, version=WORKFLOW_VERSION,
                                   workflow_input={"customer_id": customer_id}, wait_for_seconds=30)
            print(f"Customer: {customer_id}")
            print(f"Status: {run.status}")
            print(f"Output: {run.output}")
            print(f"View: {config.ui_host}/execution/{run.workflow_id}")
            statuses.append(run.status)
    finally:
        task_handler.stop_processes()
    return 0 if statuses == ["COMPLETED", "COMPLETED"] else 1


if __name__ == "__main__":
    sys.exit(main())
