"""With API authentication on, a storage location needs a token like any other call, while
the signed URI it hands out works without one (as the SDKs use it: a plain PUT/GET, like a
presigned URL); the signature is its credential."""
from __future__ import annotations

import json
from urllib.parse import urlsplit

from tests.factories import Api


def test_locations_need_a_token_but_signed_uris_do_not(as_role):
    params = {"operation": "WRITE", "payloadType": "TASK_OUTPUT"}
    assert Api().get("/tasks/externalstoragelocation", params).status_code == 401
    worker = as_role("worker")
    loc = worker.ok(worker.get("/tasks/externalstoragelocation", params)).json()
    uri = urlsplit(loc["uri"])
    anonymous = Api().client
    put = anonymous.put(f"{uri.path}?{uri.query}", data=json.dumps({"n": 1}), content_type="application/json")
    assert put.status_code == 200, put.content
    read = worker.ok(worker.get("/tasks/externalstoragelocation",
                                {"operation": "READ", "payloadType": "TASK_OUTPUT", "path": loc["path"]})).json()
    uri = urlsplit(read["uri"])
    assert anonymous.get(f"{uri.path}?{uri.query}").json() == {"n": 1}
    # without its token the same path is refused
    assert anonymous.get(uri.path).status_code == 403
    # a read-only key may read a payload but not get a WRITE location
    reader = as_role("read_only")
    assert reader.get("/tasks/externalstoragelocation", params).status_code == 403
    assert reader.get("/tasks/externalstoragelocation",
                      {"operation": "READ", "payloadType": "TASK_OUTPUT", "path": loc["path"]}).status_code == 200
    assert Api().get("/version").status_code == 401
    assert worker.ok(worker.get("/version")).content
