"""The workflow message queue's rows: one ``WorkflowMessage`` per pushed message, in the
order of arrival (``seq``), until a PULL_WORKFLOW_MESSAGES task takes it, its workflow
ends, or the queue's time to live passes (``apps.wmq.queue``)."""
from django.db import models

from apps.core.jsonfield import KeyOrderJSONField

# The messages' table (Django's default name for WorkflowMessage), for plain SQL on the
# path every workflow's end takes (``apps.wmq.queue.delete``).
MESSAGE_TABLE = "wmq_workflowmessage"


class WorkflowMessage(models.Model):
    """One message pushed to a running workflow (Conductor's ``WorkflowMessage``):
    ``message_id`` a UUID v4, ``payload`` the JSON object as the caller sent it (keys in
    their order), ``received_ms`` the push time in epoch milliseconds. Removed with its
    execution (``on_delete=CASCADE``: retention and ``DELETE /api/workflow/{id}/remove``)."""

    seq = models.BigAutoField(primary_key=True)
    message_id = models.CharField(max_length=36, unique=True)
    workflow = models.ForeignKey("engine.WorkflowExecution", on_delete=models.CASCADE, db_constraint=False,
                                 related_name="+")
    payload = KeyOrderJSONField()
    received_ms = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["workflow", "seq"], name="wmq_message_queue")]
