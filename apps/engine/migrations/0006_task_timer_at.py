"""Split ``visible_at`` in two: it keeps only the poll visibility of worker tasks, and
system-task timers (a WAIT's due time, an AI task's or another system task's delayed
retry) move to the new ``timer_at`` (epoch ms, NULL = no timer).

Before: a WAIT or AI task kept its due time in ``visible_at`` with 0 meaning "no timer",
and a delayed system-task retry (SCHEDULED, ``callbackAfterSeconds`` > 0, with a
``retriedTaskId``) its start time. Those values move to ``timer_at`` (0 becomes NULL);
every system task's ``visible_at`` becomes its ``scheduled_time``, what the engine now
writes for tasks that are on no queue. Worker tasks are untouched. The reverse puts the
timers back (NULL as 0).
"""
from django.db import migrations, models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce

# The task types that were system tasks when this migration was written (any other type
# string is a worker task). Frozen here: a migration must not follow later code.
SYSTEM_TYPES = (
    "CALL_MCP_TOOL", "DECISION", "DO_WHILE", "DYNAMIC", "EVENT", "EXCLUSIVE_JOIN", "FORK", "FORK_JOIN",
    "FORK_JOIN_DYNAMIC", "HTTP", "HUMAN", "INLINE", "JOIN", "JSON_JQ_TRANSFORM", "LAMBDA", "LIST_MCP_TOOLS",
    "LLM_CHAT_COMPLETE", "LLM_GENERATE_EMBEDDINGS", "LLM_GET_EMBEDDINGS", "LLM_INDEX_TEXT",
    "LLM_SEARCH_EMBEDDINGS", "LLM_SEARCH_INDEX", "LLM_STORE_EMBEDDINGS", "LLM_TEXT_COMPLETE", "NOOP",
    "SET_VARIABLE", "START_WORKFLOW", "SUB_WORKFLOW", "SWITCH", "TERMINATE", "WAIT",
)
# Types whose every non-zero visible_at was a timer (0 meaning "none").
TIMER_TYPES = ("WAIT", "CALL_MCP_TOOL", "LIST_MCP_TOOLS", "LLM_CHAT_COMPLETE", "LLM_GENERATE_EMBEDDINGS",
               "LLM_GET_EMBEDDINGS", "LLM_INDEX_TEXT", "LLM_SEARCH_EMBEDDINGS", "LLM_SEARCH_INDEX",
               "LLM_STORE_EMBEDDINGS", "LLM_TEXT_COMPLETE")
_DELAYED_RETRY = Q(status="SCHEDULED", callback_after_seconds__gt=0, retried_task_id__isnull=False)


def split_timers(apps, schema_editor):
    """visible_at -> timer_at for system-task timers; system tasks' visible_at := scheduled_time."""
    task = apps.get_model("engine", "TaskExecution")
    task.objects.filter(Q(task_type__in=TIMER_TYPES, visible_at__gt=0)
                        | Q(_DELAYED_RETRY, task_type__in=SYSTEM_TYPES)).update(timer_at=F("visible_at"))
    task.objects.filter(task_type__in=SYSTEM_TYPES).update(visible_at=F("scheduled_time"))


def join_timers(apps, schema_editor):
    """The reverse: system tasks' visible_at := timer_at (NULL as 0 for timer types)."""
    task = apps.get_model("engine", "TaskExecution")
    task.objects.filter(task_type__in=TIMER_TYPES).update(visible_at=Coalesce(F("timer_at"), Value(0, output_field=models.BigIntegerField())))
    task.objects.filter(_DELAYED_RETRY, task_type__in=SYSTEM_TYPES, timer_at__isnull=False) \
        .exclude(task_type__in=TIMER_TYPES).update(visible_at=F("timer_at"))


class Migration(migrations.Migration):

    dependencies = [
        ("engine", "0005_task_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="taskexecution",
            name="timer_at",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(split_timers, join_timers),
    ]
