"""Conductor's REST paths under /api (no trailing slashes: the SDK posts to exact paths)."""
from django.urls import path

from apps.api.views import bulk, health, metadata, payloads, search, tasks, token, workflow
from apps.a2a.views import AgentCardApi, AgentsApi, JsonRpcApi, PushCallbackApi
from apps.ai.views import ProvidersStatusApi
from apps.wmq.views import WorkflowMessagesApi

urlpatterns = [
    path("health", health.HealthApi.as_view()),
    # --- authentication (apps/api/auth.py)
    path("token", token.TokenApi.as_view()),
    path("token/userInfo", token.UserInfoApi.as_view()),
    path("health/ready", health.ReadyApi.as_view()),
    path("version", health.VersionApi.as_view()),
    # --- external payload storage (apps/api/views/payloads.py): locations, and the signed URIs
    path("workflow/externalstoragelocation", payloads.ExternalStorageLocationApi.as_view(resource="workflow")),
    path("tasks/externalstoragelocation", payloads.ExternalStorageLocationApi.as_view(resource="tasks")),
    path("external-payloads/<path:path>", payloads.ExternalPayloadApi.as_view(), name="external-payload"),
    # --- metadata
    path("metadata/taskdefs", metadata.TaskDefsApi.as_view()),
    # <path:name>: a name with '/' (refused since, but possibly stored before) can be read and deleted
    path("metadata/taskdefs/<path:name>", metadata.TaskDefApi.as_view()),
    path("metadata/workflow", metadata.WorkflowDefsApi.as_view()),
    path("metadata/workflow/validate", metadata.WorkflowDefValidateApi.as_view()),
    path("metadata/workflow/latest-versions", metadata.WorkflowDefLatestApi.as_view()),
    path("metadata/workflow/names", metadata.WorkflowNamesApi.as_view()),
    path("metadata/workflow/names-and-versions", metadata.WorkflowNamesAndVersionsApi.as_view()),
    path("metadata/workflow/<str:name>/versions", metadata.WorkflowVersionsApi.as_view()),
    path("metadata/workflow/<str:name>/tags", metadata.TagsApi.as_view(target_type="WORKFLOW_DEF")),
    path("metadata/task/<str:name>/tags", metadata.TagsApi.as_view(target_type="TASK_DEF")),
    path("metadata/tags", metadata.AllTagsApi.as_view()),
    path("metadata/workflow/<str:name>", metadata.WorkflowDefApi.as_view()),
    path("metadata/workflow/<path:name>/<int:version>", metadata.WorkflowDefVersionApi.as_view()),
    # --- search, bulk, metrics (before the catch-all workflow/<x> and tasks/<id> routes)
    path("workflow/search", search.WorkflowSearchApi.as_view()),
    path("workflow/search-v2", search.WorkflowSearchV2Api.as_view()),
    path("workflow/search-by-tasks", search.WorkflowSearchByTasksApi.as_view()),
    path("workflow/search-by-tasks-v2", search.WorkflowSearchByTasksV2Api.as_view()),
    path("workflow/bulk/pause", bulk.bulk_view("pause", "put")),
    path("workflow/bulk/resume", bulk.bulk_view("resume", "put")),
    path("workflow/bulk/restart", bulk.bulk_view("restart", "post")),
    path("workflow/bulk/retry", bulk.bulk_view("retry", "post")),
    path("workflow/bulk/terminate", bulk.bulk_view("terminate", "post")),
    path("workflow/bulk/remove", bulk.bulk_view("remove", "delete")),
    path("workflow/bulk/terminate-remove", bulk.bulk_view("terminate-remove", "delete")),
    path("workflow/bulk/search", bulk.bulk_view("search", "post")),
    path("tasks/search", search.TaskSearchApi.as_view()),
    path("tasks/search-v2", search.TaskSearchV2Api.as_view()),
    path("providers/status", ProvidersStatusApi.as_view()),
    # --- A2A: workflows served as agents (apps.a2a)
    path("a2a/workflow", AgentsApi.as_view()),
    path("a2a/workflow/<str:name>/.well-known/agent-card.json", AgentCardApi.as_view()),
    path("a2a/workflow/<str:name>/.well-known/agent.json", AgentCardApi.as_view()),
    path("a2a/workflow/<str:name>", JsonRpcApi.as_view()),
    path("a2a/workflow/<str:name>/rpc", JsonRpcApi.as_view()),
    path("a2a/callback/<str:task_id>", PushCallbackApi.as_view()),
    # --- workflow
    path("workflow", workflow.StartWorkflowApi.as_view()),
    path("workflow/test", workflow.WorkflowTestApi.as_view()),
    path("workflow/execute/<str:name>/<int:version>", workflow.ExecuteWorkflowApi.as_view()),
    path("workflow/running/<str:name>", workflow.RunningWorkflowsApi.as_view()),
    path("workflow/correlated/batch", workflow.CorrelatedSearchApi.as_view()),
    path("workflow/decide/<str:workflow_id>", workflow.DecideWorkflowApi.as_view()),
    path("workflow/<str:name>/correlated", workflow.CorrelatedBatchApi.as_view()),
    path("workflow/<str:name>/correlated/<str:correlation_id>", workflow.CorrelatedApi.as_view()),
    path("workflow/<str:workflow_id>/status", workflow.WorkflowStatusApi.as_view()),
    path("workflow/<str:workflow_id>/history", workflow.WorkflowHistoryApi.as_view()),
    path("workflow/<str:workflow_id>/pause", workflow.PauseWorkflowApi.as_view()),
    path("workflow/<str:workflow_id>/resume", workflow.ResumeWorkflowApi.as_view()),
    path("workflow/<str:workflow_id>/remove", workflow.RemoveWorkflowApi.as_view()),
    path("workflow/<str:workflow_id>/restart", workflow.RestartWorkflowApi.as_view()),
    path("workflow/<str:workflow_id>/retry", workflow.RetryWorkflowApi.as_view()),
    path("workflow/<str:workflow_id>/rerun", workflow.RerunWorkflowApi.as_view()),
    path("workflow/<str:workflow_id>/resetcallbacks", workflow.ResetCallbacksApi.as_view()),
    path("workflow/<str:workflow_id>/skiptask/<str:task_ref_name>", workflow.SkipTaskApi.as_view()),
    path("workflow/<str:workflow_id>/tasks", workflow.WorkflowTasksApi.as_view()),
    path("workflow/<str:workflow_id>/variables", workflow.WorkflowVariablesApi.as_view()),
    path("workflow/<str:workflow_id>/messages", WorkflowMessagesApi.as_view()),
    path("workflow/<str:workflow_id>/terminate-remove", workflow.TerminateRemoveApi.as_view()),
    # POST /workflow/{name} starts; GET/DELETE /workflow/{id} read/terminate
    path("workflow/<str:name_or_id>", workflow.WorkflowOrStartApi.as_view()),
    # --- tasks
    path("tasks", tasks.update_task),
    path("tasks/update-v2", tasks.update_task_v2),
    path("tasks/poll/batch/<str:task_type>", tasks.batch_poll),
    path("tasks/poll/<str:task_type>", tasks.single_poll),
    path("tasks/queue/sizes", tasks.QueueSizesApi.as_view()),
    path("tasks/queue/size", tasks.QueueSizeApi.as_view()),
    path("tasks/queue/all", tasks.QueueAllApi.as_view()),
    path("tasks/queue/all/verbose", tasks.QueueAllVerboseApi.as_view()),
    path("tasks/queue/polldata", tasks.PollDataApi.as_view()),
    path("tasks/queue/polldata/all", tasks.PollDataAllApi.as_view()),
    path("tasks/queue/requeue/<str:task_type>", tasks.RequeuePendingApi.as_view()),
    path("tasks/<str:task_id>/log", tasks.TaskLogApi.as_view()),
    path("tasks/<str:task_id>", tasks.TaskApi.as_view()),
    # signal before update-by-reference: ``{wf}/COMPLETED/signal`` would read as ref=COMPLETED
    path("tasks/<str:workflow_id>/<str:status>/signal", tasks.SignalApi.as_view()),
    path("tasks/<str:workflow_id>/<str:status>/signal/sync", tasks.SignalSyncApi.as_view()),
    path("tasks/<str:workflow_id>/<str:task_ref_name>/<str:status>", tasks.UpdateByRefApi.as_view()),
    path("tasks/<str:workflow_id>/<str:task_ref_name>/<str:status>/sync", tasks.UpdateByRefSyncApi.as_view()),
]

# --- events
from apps.api.views import events  # noqa: E402

urlpatterns += [
    path("event", events.EventHandlersApi.as_view()),
    path("event/<str:name_or_event>", events.EventHandlerApi.as_view()),
    path("queue/", events.QueueNamesApi.as_view()),
    path("queue/size", events.QueueSizeApi.as_view()),
    path("queue/update/<str:workflow_id>/task/<str:task_id>/<str:status>", events.QueueUpdateByTaskIdApi.as_view()),
    path("queue/update/<str:workflow_id>/<str:task_ref_name>/<str:status>", events.QueueUpdateByRefApi.as_view()),
]

# --- admin (Conductor's AdminResource; the admin role)
from apps.api.views import admin  # noqa: E402

urlpatterns += [
    path("admin/config", admin.ConfigApi.as_view()),
    path("admin/queues", admin.EventQueuesApi.as_view()),
    path("admin/task/<str:task_type>", admin.PendingTasksApi.as_view()),
    path("admin/sweep/requeue/<str:workflow_id>", admin.RequeueSweepApi.as_view()),
    path("admin/consistency/verifyAndRepair/<str:workflow_id>", admin.VerifyAndRepairApi.as_view()),
]

# --- environment and secrets stores (docs/secrets.md)
from apps.api.views import secrets  # noqa: E402

urlpatterns += [
    path("environment", secrets.EnvironmentApi.as_view()),
    path("environment/<str:key>", secrets.EnvironmentVariableApi.as_view()),
    path("secrets", secrets.SecretsApi.as_view()),
    path("secrets/v2", secrets.SecretsV2Api.as_view()),
    path("secrets-v2", secrets.SecretsV2AliasApi.as_view()),
    path("secrets/<str:key>", secrets.SecretApi.as_view()),
    path("secrets/<str:key>/exists", secrets.SecretExistsApi.as_view()),
]
