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


@pytest.mark.skipif(shutil.which("nginx") is None, reason="needs nginx")
def test_nginx_accepts_the_proxy_config(tmp_path):
    (tmp_path / "logs").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(f"""pid {tmp_path}/nginx.pid;
error_log {tmp_path}/logs/error.log;
events {{}}
http {{
    access_log off;
    client_body_temp_path {tmp_path}/b; proxy_temp_path {tmp_path}/p; fastcgi_temp_path {tmp_path}/f;
    uwsgi_temp_path {tmp_path}/u; scgi_temp_path {tmp_path}/s;
    include {DEPLOY / 'nginx.conf'};
}}
""")
    result = subprocess.run(["nginx", "-t", "-p", str(tmp_path), "-c", str(conf)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
