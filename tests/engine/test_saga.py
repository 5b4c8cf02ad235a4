"""The saga example (examples/definitions/order_saga.json): a failed order starts its
failure workflow, which compensates in reverse order what was done."""
from __future__ import annotations

import json
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "definitions" / "order_saga.json"


def load(api):
    doc = json.loads(EXAMPLE.read_text())
    api.register_task_defs(*doc["taskDefs"])
    for wf in doc["workflowDefs"]:
        api.register_workflow(wf)


def test_failed_confirmation_is_compensated_in_reverse_order(api):
    load(api)
    r = api.post("/workflow", {"name": "order_saga", "input": {"order_id": 7}})
    assert r.status_code == 400
    assert [e["path"] for e in r.json()["validationErrors"]] == ["input.amount", "input.order_id"]
    wid = api.start("order_saga", {"order_id": "A-1", "amount": 25})
    api.complete(api.poll_one("saga_charge_payment"), {"transaction_id": "tx-1"})
    api.complete(api.poll_one("saga_reserve_stock"), {"reservation_id": "rs-1"})
    api.complete(api.poll_one("saga_create_shipment"), {"shipment_id": "sh-1", "tracking": "TR-1"})
    confirm = api.poll_one("saga_confirm_order")
    assert confirm["inputData"] == {"order_id": "A-1", "tracking": "TR-1"}
    api.ok(api.update(confirm, "FAILED_WITH_TERMINAL_ERROR", reasonForIncompletion="customer refused"))
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED"
    assert wf["output"]["shipment_id"] == "sh-1"
    compensation = wf["output"]["conductor.failure_workflow"]
    order = []
    for name in ("saga_cancel_shipment", "saga_restore_stock", "saga_refund_payment"):
        later = {"saga_cancel_shipment": "saga_refund_payment", "saga_restore_stock": "saga_refund_payment",
                 "saga_refund_payment": "saga_cancel_shipment"}[name]
        assert api.poll(later) == []  # strictly one step at a time
        task = api.poll_one(name)
        assert task["workflowInstanceId"] == compensation
        order.append((name, task["inputData"]))
        api.complete(task)
    assert order == [("saga_cancel_shipment", {"shipment_id": "sh-1"}),
                     ("saga_restore_stock", {"reservation_id": "rs-1"}),
                     ("saga_refund_payment", {"transaction_id": "tx-1", "amount": 25})]
    done = api.workflow(compensation)
    assert done["status"] == "COMPLETED"
    assert done["output"] == {"compensated": wid, "reason": wf["reasonForIncompletion"]}
    assert "customer refused" in done["input"]["reason"]


def test_early_failure_compensates_only_what_happened(api):
    load(api)
    wid = api.start("order_saga", {"order_id": "A-2", "amount": 5})
    api.complete(api.poll_one("saga_charge_payment"), {"transaction_id": "tx-2"})
    api.ok(api.update(api.poll_one("saga_reserve_stock"), "FAILED_WITH_TERMINAL_ERROR", reasonForIncompletion="no stock"))
    compensation = api.workflow(wid)["output"]["conductor.failure_workflow"]
    inputs = {}
    for name in ("saga_cancel_shipment", "saga_restore_stock", "saga_refund_payment"):
        task = api.poll_one(name)
        inputs[name] = task["inputData"]
        api.complete(task)
    assert inputs == {"saga_cancel_shipment": {"shipment_id": None},
                      "saga_restore_stock": {"reservation_id": None},
                      "saga_refund_payment": {"transaction_id": "tx-2", "amount": 5}}
    assert api.workflow(compensation)["status"] == "COMPLETED"
