"""``/api/metadata``: TaskDef and WorkflowDef registration and lookup.

Verbs as Conductor's MetadataResource: POST one WorkflowDef vs PUT a list; POST a list of
TaskDefs vs PUT one TaskDef.
"""
from __future__ import annotations

from rest_framework.response import Response

from apps.api.params import qbool, qint
from apps.api.parsers import require_json
from apps.api.views.base import ConductorApi, empty
from apps.core.errors import InvalidInput, validation_failed
from apps.metadata import services


class TaskDefsApi(ConductorApi):
    def get(self, request):
        return Response(services.task_def_list())

    def post(self, request):
        services.task_defs_register(task_defs=require_json(request.data))
        return empty()

    def put(self, request):
        data = require_json(request.data)
        if not isinstance(data, dict):
            raise InvalidInput("Request body must be one TaskDef object")
        services.task_def_update(task_def=data)
        return empty()


class TaskDefApi(ConductorApi):
    def get(self, request, name):
        return Response(services.task_def_get(name=name))

    def delete(self, request, name):
        services.task_def_delete(name=name)
        return empty()


class WorkflowDefsApi(ConductorApi):
    def get(self, request):
        return Response(services.workflow_def_list())

    def post(self, request):
        data = require_json(request.data)
        if not isinstance(data, dict):
            raise InvalidInput("Request body must be one WorkflowDef object")
        services.workflow_def_register(workflow_def=data, overwrite=qbool(request.query_params, "overwrite", False))
        return empty()

    def put(self, request):
        return Response(services.workflow_defs_update(workflow_defs=require_json(request.data)))


class WorkflowDefValidateApi(ConductorApi):
    def post(self, request):
        normalized = services.workflow_def_validate(workflow_def=require_json(request.data),
                                                    path="validateWorkflowDef.arg0")
        cycles = services.sub_workflow_cycle_errors(normalized, "validateWorkflowDef.arg0")
        if cycles:
            raise validation_failed(cycles)
        return empty()


class WorkflowDefLatestApi(ConductorApi):
    def get(self, request):
        return Response(services.workflow_def_latest_list())


class WorkflowDefApi(ConductorApi):
    def get(self, request, name):
        return Response(services.workflow_def_get(name=name, version=qint(request.query_params, "version", None)))


class WorkflowDefVersionApi(ConductorApi):
    def delete(self, request, name, version):
        services.workflow_def_delete(name=name, version=version)
        return empty()


class WorkflowNamesApi(ConductorApi):
    """``GET /metadata/workflow/names`` -> the distinct WorkflowDef names."""

    def get(self, request):
        return Response(sorted({d["name"] for d in services.workflow_def_list()}))


class WorkflowNamesAndVersionsApi(ConductorApi):
    """``GET /metadata/workflow/names-and-versions`` -> ``{name: [WorkflowDefSummary]}``."""

    def get(self, request):
        out: dict[str, list] = {}
        for d in services.workflow_def_list():
            out.setdefault(d["name"], []).append({"name": d["name"], "version": d.get("version", 1),
                                                  "createTime": d.get("createTime"), "updateTime": d.get("updateTime")})
        return Response(out)


class WorkflowVersionsApi(ConductorApi):
    """``GET /metadata/workflow/{name}/versions`` -> ``[WorkflowDefSummary]``."""

    def get(self, request, name):
        return Response([{"name": d["name"], "version": d.get("version", 1), "createTime": d.get("createTime"),
                          "updateTime": d.get("updateTime")}
                         for d in services.workflow_def_list() if d["name"] == name])


class TagsApi(ConductorApi):
    """Orkes's metadata tags of one definition: ``GET`` -> ``[TagObject]``; ``POST`` a
    TagObject and ``PUT`` a list add; ``DELETE`` with a TagObject/TagString body removes it.
    ``target_type`` is WORKFLOW_DEF (``/metadata/workflow/{name}/tags``) or TASK_DEF
    (``/metadata/task/{name}/tags``). 404 for an unknown definition."""

    target_type = "WORKFLOW_DEF"

    def get(self, request, name):
        return Response(services.tags_get(target_type=self.target_type, name=name))

    def post(self, request, name):
        tag = require_json(request.data)
        services.tags_add(target_type=self.target_type, name=name, tags=[tag] if isinstance(tag, dict) else tag)
        return empty()

    def put(self, request, name):
        services.tags_add(target_type=self.target_type, name=name, tags=require_json(request.data))
        return empty()

    def delete(self, request, name):
        services.tags_delete(target_type=self.target_type, name=name, tag=require_json(request.data))
        return empty()


class AllTagsApi(ConductorApi):
    """``GET /metadata/tags`` -> every distinct tag of every definition."""

    def get(self, request):
        return Response(services.tags_all())

