"""Durable state of executions: WorkflowExecution, TaskExecution (one row per attempt),
TaskExecLog, PollData, the TaskHandout window of rate-limited deliveries, SweeperLease
(the leases of the sweeper, of running system tasks and of the listener delivery), the
internal event queue (EventMessage, EventExecution) and the execution history
(ExecutionEvent).

Times are epoch milliseconds (``BigIntegerField``), as Conductor exposes them; ``0`` means
"not set" where Conductor uses 0. JSON columns keep user payloads untouched (no key
transformation). The task queue is the TaskExecution table itself: a worker task is
pollable when ``status = SCHEDULED`` and ``visible_at <= now`` on its ``queue_name``
(``[domain:]taskType``), so a retry delay or ``callbackAfterSeconds`` is just a later
``visible_at``. System tasks are on no queue: their timers (a WAIT's due time, a delayed
retry) are ``timer_at``, NULL meaning "no timer" (the one convention for "never").
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q

from apps.engine.status import ACTIVE_WORKFLOW, TASK_STATUSES, WORKFLOW_STATUSES

# Column choices, from the one list of statuses (``apps.engine.status``).
WorkflowStatus = models.TextChoices("WorkflowStatus", [(s, s) for s in WORKFLOW_STATUSES])
TaskStatus = models.TextChoices("TaskStatus", [(s, s) for s in TASK_STATUSES])


class WorkflowExecution(models.Model):
    """One workflow execution; ``definition`` is the WorkflowDef snapshot it runs.

    ``next_decide_at`` (epoch ms) is when the sweeper must decide it next (a timer, a
    timeout, or the periodic repair); NULL once terminal.
    """

    workflow_id = models.CharField(primary_key=True, max_length=64)
    workflow_name = models.CharField(max_length=255)
    workflow_version = models.IntegerField()
    status = models.CharField(max_length=16, choices=WorkflowStatus.choices)
    definition = models.JSONField()
    input = models.JSONField(default=dict)
    output = models.JSONField(default=dict)
    variables = models.JSONField(default=dict)
    correlation_id = models.CharField(max_length=255, null=True, blank=True)
    priority = models.IntegerField(default=0)
    task_to_domain = models.JSONField(default=dict)
    parent_workflow_id = models.CharField(max_length=64, null=True, blank=True)
    parent_workflow_task_id = models.CharField(max_length=64, null=True, blank=True)
    reason_for_incompletion = models.TextField(null=True, blank=True)
    failed_reference_task_names = models.JSONField(default=list)
    failed_task_names = models.JSONField(default=list)
    re_run_from_workflow_id = models.CharField(max_length=64, null=True, blank=True)
    created_by = models.CharField(max_length=255, null=True, blank=True)
    event = models.CharField(max_length=255, null=True, blank=True)
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    create_time = models.BigIntegerField()
    update_time = models.BigIntegerField()
    end_time = models.BigIntegerField(default=0)
    last_retried_time = models.BigIntegerField(default=0)
    next_decide_at = models.BigIntegerField(null=True, blank=True)

    class Meta:
        db_table = "engine_workflow_execution"
        verbose_name = "workflow execution"
        indexes = [
            # sweeper: due executions that are not terminal
            models.Index(fields=["next_decide_at"], name="wf_due", condition=Q(status__in=list(ACTIVE_WORKFLOW))),
            # search by name/status/time, running list
            models.Index(fields=["workflow_name", "status", "create_time"], name="wf_search"),
            models.Index(fields=["create_time"], name="wf_create_time"),
            models.Index(fields=["correlation_id"], name="wf_correlation"),
            models.Index(fields=["parent_workflow_id"], name="wf_parent"),
            # metrics and search over ended executions
            models.Index(fields=["end_time"], name="wf_end_time", condition=Q(end_time__gt=0)),
            # the UI's problem views: one status (Failed, Timed out) newest first, and the
            # counts per status, across all names; a definition's last runs (run grid)
            models.Index(fields=["status", "create_time"], name="wf_status_create"),
            models.Index(fields=["workflow_name", "create_time"], name="wf_name_create"),
        ]
        constraints = [
            # StartWorkflowRequest.idempotencyKey: one execution per (workflow name, key)
            models.UniqueConstraint(fields=["workflow_name", "idempotency_key"], name="wf_idempotency",
                                    condition=Q(idempotency_key__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_name} v{self.workflow_version} {self.workflow_id} ({self.status})"


class TaskExecution(models.Model):
    """One attempt of one task of a workflow execution (a retry is a new row).

    Queue columns: ``queue_name`` (``[domain:]taskType`` for worker tasks, empty for
    system tasks) and ``visible_at`` (epoch ms before which a poll must not hand it out;
    0 = any time). ``timer_at`` (epoch ms, NULL = no timer) is when a system task's timer
    fires: a WAIT's ``duration``/``until``, the end of a system task retry's delay.
    """

    task_id = models.CharField(primary_key=True, max_length=64)
    # no index of its own: task_workflow_seq (workflow, seq) serves every look-up by
    # workflow, and each index is written on every row version of a task (issue #25)
    workflow = models.ForeignKey(WorkflowExecution, on_delete=models.CASCADE, related_name="tasks",
                                 db_column="workflow_id", db_index=False)
    workflow_type = models.CharField(max_length=255)
    workflow_priority = models.IntegerField(default=0)
    task_type = models.CharField(max_length=64)
    task_def_name = models.CharField(max_length=255)
    reference_task_name = models.CharField(max_length=255)
    seq = models.IntegerField()
    iteration = models.IntegerField(default=0)
    retry_count = models.IntegerField(default=0)
    poll_count = models.IntegerField(default=0)
    status = models.CharField(max_length=32, choices=TaskStatus.choices)
    input_data = models.JSONField(default=dict)
    output_data = models.JSONField(default=dict)
    workflow_task = models.JSONField(default=dict)
    scheduled_time = models.BigIntegerField(default=0)
    start_time = models.BigIntegerField(default=0)
    end_time = models.BigIntegerField(default=0)
    update_time = models.BigIntegerField(default=0)
    first_scheduled_time = models.BigIntegerField(default=0)
    start_delay_seconds = models.IntegerField(default=0)
    callback_after_seconds = models.BigIntegerField(default=0)
    response_timeout_seconds = models.BigIntegerField(default=0)
    queue_name = models.CharField(max_length=255, blank=True, default="")
    visible_at = models.BigIntegerField(default=0)
    timer_at = models.BigIntegerField(null=True, blank=True)
    domain = models.CharField(max_length=255, null=True, blank=True)
    worker_id = models.CharField(max_length=255, null=True, blank=True)
    reason_for_incompletion = models.TextField(null=True, blank=True)
    retried = models.BooleanField(default=False)
    executed = models.BooleanField(default=False)
    retried_task_id = models.CharField(max_length=64, null=True, blank=True)
    sub_workflow_id = models.CharField(max_length=64, null=True, blank=True)
    # TaskDef limits the task was scheduled with (Conductor's TaskModel rateLimitPerFrequency,
    # rateLimitFrequencyInSeconds; concurrentExecLimit of its taskDefinition); 0 = none
    concurrent_exec_limit = models.IntegerField(default=0)
    rate_limit_per_frequency = models.IntegerField(default=0)
    rate_limit_frequency_in_seconds = models.IntegerField(default=0)
    # the evaluation (apps.engine.evaluation.key) a DO_WHILE waits for since update_time; "" = none
    evaluation_key = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        db_table = "engine_task_execution"
        verbose_name = "task execution"
        indexes = [
            # a claim: the pollable tasks of one queue in delivery order (highest
            # workflowPriority first, then the earliest visible), read up to its LIMIT
            # instead of sorting the whole queue (1.5 ms -> 0.04 ms for 2,000 queued tasks)
            models.Index(fields=["queue_name", "-workflow_priority", "visible_at"], name="task_claim",
                         condition=Q(status="SCHEDULED")),
            # a poll that found nothing: when the queue's next task becomes visible (MIN(visible_at))
            models.Index(fields=["queue_name", "visible_at"], name="task_poll", condition=Q(status="SCHEDULED")),
            models.Index(fields=["workflow", "seq"], name="task_workflow_seq"),
            # a decide reads the unsettled tasks, then finished ones by reference (store.TaskList)
            models.Index(fields=["workflow", "seq"], name="task_active",
                         condition=Q(executed=False, retried=False)),
            models.Index(fields=["workflow", "reference_task_name"], name="task_workflow_ref"),
            # search and in-progress listings
            models.Index(fields=["task_def_name", "status"], name="task_def_status"),
            # metrics over ended / started attempts, and the live gauges
            models.Index(fields=["end_time"], name="task_end_time", condition=Q(end_time__gt=0)),
            models.Index(fields=["start_time"], name="task_start_time", condition=Q(start_time__gt=0)),
            models.Index(fields=["task_def_name"], name="task_pending",
                         condition=Q(status__in=["SCHEDULED", "IN_PROGRESS"])),
            # the UI's human-task inbox: HUMAN and WAIT tasks waiting (not partial: SQLite
            # uses a partial index only for literal values, and Django binds parameters)
            models.Index(fields=["task_type", "status", "scheduled_time"], name="task_inbox"),
        ]

    def __str__(self) -> str:
        return f"{self.reference_task_name} {self.task_id} ({self.status})"


class TaskHandout(models.Model):
    """One delivery of a task whose TaskDef has ``rateLimitPerFrequency`` (apps.engine.limits):
    the deliveries of the last ``rateLimitFrequencyInSeconds`` are the rate window.
    ``handed_at`` is epoch ms; rows older than the window are deleted by the next admission."""

    task_def_name = models.CharField(max_length=255)
    handed_at = models.BigIntegerField()

    class Meta:
        db_table = "engine_task_handout"
        verbose_name = "rate-limited task delivery"
        indexes = [models.Index(fields=["task_def_name", "handed_at"], name="task_handout_window")]

    def __str__(self) -> str:
        return f"{self.task_def_name} @ {self.handed_at}"


class TaskExecLog(models.Model):
    """A log line of a task execution (``TaskExecLog``: log, taskId, createdTime in ms)."""

    task_id = models.CharField(max_length=64, db_index=True)
    log = models.TextField()
    created_time = models.BigIntegerField()

    class Meta:
        db_table = "engine_task_exec_log"
        ordering = ["id"]


class PollData(models.Model):
    """Last poll of each worker on each queue: ``queueName`` is the task type, ``domain``
    the poll's domain ("" for none), ``lastPollTime`` epoch ms."""

    queue_name = models.CharField(max_length=255)
    domain = models.CharField(max_length=255, blank=True, default="")
    worker_id = models.CharField(max_length=255, blank=True, default="")
    last_poll_time = models.BigIntegerField()

    class Meta:
        db_table = "engine_poll_data"
        constraints = [models.UniqueConstraint(fields=["queue_name", "domain", "worker_id"], name="poll_data_unique")]


class SweeperLease(models.Model):
    """A named lease (``holder`` until ``expires_at``, epoch ms) that keeps one sweeper
    loop running per cluster; taken and renewed by compare-and-set."""

    name = models.CharField(max_length=64, primary_key=True)
    holder = models.CharField(max_length=255)
    expires_at = models.BigIntegerField()

    class Meta:
        db_table = "engine_sweeper_lease"

    @classmethod
    def acquire(cls, name: str, holder: str, lease_ms: int) -> bool:
        """Take or renew the lease for ``lease_ms``; True if ``holder`` now holds it."""
        from django.db import IntegrityError, transaction

        from apps.core.clock import now_ms

        now = now_ms()
        taken = cls.objects.filter(Q(name=name) & (Q(holder=holder) | Q(expires_at__lt=now))).update(
            holder=holder, expires_at=now + lease_ms)
        if taken:
            return True
        try:
            with transaction.atomic():
                cls.objects.create(name=name, holder=holder, expires_at=now + lease_ms)
            return True
        except IntegrityError:
            return False

    @classmethod
    def release(cls, name: str, holder: str) -> None:
        cls.objects.filter(name=name, holder=holder).update(expires_at=0)

    @classmethod
    def held(cls, name: str) -> bool:
        from apps.core.clock import now_ms

        return cls.objects.filter(name=name, expires_at__gte=now_ms()).exists()


class EventMessage(models.Model):
    """A message on the internal event queue (Conductor's ``conductor:`` queues).

    ``event`` is the full event name handlers listen on (``conductor:<workflowName>:<x>``
    for EVENT tasks, ``_default_queue:<STATUS>`` for ``POST /api/queue/update/...``);
    ``payload`` the message JSON. ``message_id`` is the EVENT task's id (Conductor's
    Message id) or a random UUID. Processing claims the message by compare-and-set on
    ``lease_until`` (epoch ms) and ends by setting ``processed_time`` (epoch ms; NULL
    while pending); ``attempts`` counts claims.
    """

    message_id = models.CharField(primary_key=True, max_length=64)
    event = models.CharField(max_length=512)
    payload = models.JSONField(default=dict)
    created_time = models.BigIntegerField()
    attempts = models.IntegerField(default=0)
    lease_until = models.BigIntegerField(default=0)
    processed_time = models.BigIntegerField(null=True, blank=True)

    class Meta:
        db_table = "engine_event_message"
        verbose_name = "event message"
        indexes = [
            # the event sweep: pending messages, oldest first
            models.Index(fields=["created_time"], name="event_msg_pending", condition=Q(processed_time__isnull=True)),
            models.Index(fields=["event", "created_time"], name="event_msg_event"),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.message_id}"


class EventExecutionStatus(models.TextChoices):
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"


class EventExecution(models.Model):
    """One execution of one EventHandler for one message (Conductor's EventExecution).

    ``action_index`` is the position of the action in the handler's ``actions`` (its
    ``action`` name in ``action``), or -1 for a record about the whole handler (condition
    false: SKIPPED; condition error: FAILED). (message, handler, index) is unique, which
    makes every action run at most once per message. ``output`` is the action's output,
    or ``{"exception": reason}`` when it failed. ``created_time`` is epoch ms.
    """

    message_id = models.CharField(max_length=64)
    handler_name = models.CharField(max_length=255)
    event = models.CharField(max_length=512)
    action_index = models.IntegerField()
    action = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(max_length=16, choices=EventExecutionStatus.choices)
    output = models.JSONField(default=dict)
    created_time = models.BigIntegerField()

    class Meta:
        db_table = "engine_event_execution"
        verbose_name = "event execution"
        constraints = [
            models.UniqueConstraint(fields=["message_id", "handler_name", "action_index"], name="event_execution_once"),
        ]
        indexes = [
            models.Index(fields=["handler_name", "created_time"], name="event_exec_handler"),
        ]

    def __str__(self) -> str:
        return f"{self.handler_name} {self.action or '-'} {self.message_id} ({self.status})"


class ExecutionEvent(models.Model):
    """One entry of an execution's history (``apps.engine.history``): appended by the engine
    in the transaction of the change it describes, never updated except by compaction.

    ``id`` is the total order of the history (served as ``seq``); ``time`` epoch ms;
    ``kind`` what happened (``workflow.started``, ``workflow.status``, ``workflow.updated``, ``task.scheduled``,
    ``task.retried``, ``task.polled``, ``task.updated``, ``task.timed_out``,
    ``task.canceled``, ``task.skipped``, ``task.removed``, ``action``,
    ``definition.replaced``, ``history.compacted``); ``task_id`` the task concerned, if
    any; ``data`` the details (camelCase keys, bounded by
    ``CONDUCTOR["HISTORY_EVENT_MAX_BYTES"]``). No foreign key: the rows are deleted with
    their execution by ``retention.delete_executions``.
    """

    id = models.BigAutoField(primary_key=True)
    workflow_id = models.CharField(max_length=64)
    time = models.BigIntegerField()
    kind = models.CharField(max_length=32)
    task_id = models.CharField(max_length=64, null=True, blank=True)
    data = models.JSONField(default=dict)

    class Meta:
        db_table = "engine_execution_event"
        verbose_name = "execution history event"
        indexes = [models.Index(fields=["workflow_id", "id"], name="exec_event_workflow")]

    def __str__(self) -> str:
        return f"{self.workflow_id} #{self.id} {self.kind}"


class ExternalPayload(models.Model):
    """A JSON payload kept outside its workflow or task (Conductor's external payload
    storage): uploaded by an SDK to the signed URI of ``GET /api/{workflow,tasks}/
    externalstoragelocation`` and referenced by ``externalInputPayloadStoragePath`` /
    ``externalOutputPayloadStoragePath``. Written once; read by the engine and the SDKs."""

    path = models.CharField(primary_key=True, max_length=255)
    payload_type = models.CharField(max_length=16)  # WORKFLOW_INPUT, WORKFLOW_OUTPUT, TASK_INPUT, TASK_OUTPUT
    data = models.JSONField()
    size_bytes = models.BigIntegerField()
    created_time = models.BigIntegerField()  # epoch ms

    class Meta:
        db_table = "engine_external_payload"
