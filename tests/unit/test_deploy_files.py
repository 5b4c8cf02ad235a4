"""The deployment recipe's files (deploy/) are well-formed: shell scripts parse, the
systemd units name the scripts the scale-out test runs, the alert rules are valid YAML
on metrics the server exports, and nginx accepts the proxy config (when nginx is
installed)."""
from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SCRIPTS = ("server.sh", "cluster.sh", "migrate.sh")


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_are_executable_bash(name):
    path = DEPLOY / name
    assert path.stat().st_mode & 0o111
    subprocess.run(["bash", "-n", str(path)], check=True)


@pytest.mark.parametrize("unit,script", [("conductor-server@.service", "server.sh"),
                                         ("conductor-cluster@.service", "cluster.sh"),
                                         ("conductor-migrate.service", "migrate.sh")])
def test_systemd_units_run_the_recipe_scripts(unit, script):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(DEPLOY / "systemd" / unit)
    assert {"Unit", "Service"} <= set(parser.sections())
    assert parser["Service"]["ExecStart"] == f"/srv/conductor-web/deploy/{script}"
    assert parser["Service"]["EnvironmentFile"] == "/etc/conductor-web/conductor-web.env"
    if script != "migrate.sh":
        assert parser["Service"]["KillMode"] == "mixed"


def test_alert_rules_use_exported_metrics():
    rules = yaml.safe_load((DEPLOY / "alerts.yml").read_text())
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    assert all(r["alert"] and r["annotations"]["summary"] for g in rules["groups"] for r in g["rules"])
    for metric in ("sweeper_last_run_age_seconds", "sweeper_due_lag_seconds", "cluster_queue_depth"):
        assert any(metric in e for e in exprs)


def test_env_example_names_known_settings():
    names = [line.split("=", 1)[0] for line in (DEPLOY / "conductor-web.env.example").read_text().splitlines()
             if line and not line.startswith("#")]
    assert {"DATABASE_URL", "SECRET_KEY", "Q_REDIS_URL", "CHANNEL_REDIS_URL", "CONDUCTOR_RETENTION"} <= set(names)


def _commands(doc) -> list[list[str]]:
    """Every ``command`` list in a YAML document (compose services, pod containers)."""
    found = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "command" and isinstance(value, list):
                found.append(value)
            else:
                found += _commands(value)
    elif isinstance(doc, list):
        for item in doc:
            found += _commands(item)
    return found


@pytest.mark.parametrize("name", ["compose.yaml", "kubernetes.yaml"])
def test_container_commands_are_the_recipe_scripts(name):
    docs = list(yaml.safe_load_all((DEPLOY / name).read_text()))
    ours = [c for c in _commands(docs) if c[0].startswith("deploy/")]
    assert {c[0] for c in ours} == {f"deploy/{s}" for s in SCRIPTS}
    assert all((DEPLOY.parent / c[0]).exists() for c in ours)


def test_kubernetes_probes_use_the_health_endpoints():
    docs = {d["metadata"]["name"]: d for d in yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text())}
    [server] = docs["conductor-web-server"]["spec"]["template"]["spec"]["containers"]
    assert server["readinessProbe"]["httpGet"]["path"] == "/health/ready"
    assert server["livenessProbe"]["httpGet"]["path"] == "/health"
    assert docs["conductor-web-migrate"]["kind"] == "Job"


def test_dockerfile_copies_what_exists_and_runs_the_server_script():
    lines = (DEPLOY / "Dockerfile").read_text().splitlines()
    for line in lines:
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (DEPLOY.parent / source).exists(), source
    assert 'CMD ["deploy/server.sh"]' in lines
    assert any(line.startswith("USER ") and "root" not in line for line in lines)


@pytest.mark.skipif(shutil.which("nginx") is None, reason="needs nginx")
def test_nginx_accepts_the_proxy_config(tmp_path):
    (tmp_path / "logs").mkdir()
    site = tmp_path / "site.conf"
    site.write_text((DEPLOY / "nginx.conf").read_text().replace("/srv/conductor-web", str(DEPLOY.parent)))
    conf = tmp_path / "nginx.conf"
    conf.write_text(f"""pid {tmp_path}/nginx.pid;
error_log {tmp_path}/logs/error.log;
events {{}}
http {{
    access_log off;
    client_body_temp_path {tmp_path}/b; proxy_temp_path {tmp_path}/p; fastcgi_temp_path {tmp_path}/f;
    uwsgi_temp_path {tmp_path}/u; scgi_temp_path {tmp_path}/s;
    include {site};
}}
""")
    result = subprocess.run(["nginx", "-t", "-p", str(tmp_path), "-c", str(conf)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_grafana_dashboard_queries_exported_metrics():
    import json
    import re

    source = (DEPLOY.parent / "apps" / "engine" / "metrics.py").read_text()
    dashboard = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert exprs
    for expr in exprs:
        for name in re.findall(r"\b([a-z_]+)(?:\{|\[|\)|$)", expr):
            if name in ("sum", "by", "rate", "min", "max", "histogram_quantile", "le"):
                continue
            base = re.sub(r"_(total|bucket)$", "", name)
            assert f'"{base}"' in source or f"``{base}" in source, name
