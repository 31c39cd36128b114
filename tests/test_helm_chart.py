"""The Helm chart renders, and wires exactly the settings codeask reads.

Needs the helm binary (``bash scripts/helm.sh install`` caches it; CI runs
``scripts/helm.sh check`` first); skipped with that instruction when it is missing.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import AliasChoices, AliasPath
from pydantic_settings import BaseSettings

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm" / "codeask"
PRODUCTION_VALUES = CHART / "ci" / "production-values.yaml"
SETTINGS_PACKAGES = ("bot", "indexer", "acl", "eval")
WORKLOADS = {"Deployment", "CronJob", "Job"}
# A setting with such a name holds a credential: it must come from a Secret.
SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PRIVATE_KEY|API_KEY)$")
# What no cluster install works without, wired whatever the values (besides every credential).
REQUIRED_ALWAYS = {
    "CODEASK_STORE",
    "CODEASK_OPENSEARCH_URL",
    "CODEASK_DATABASE_URL",
    "CODEASK_DATA_DIR",
    "CODEASK_GITHUB_APP_PRIVATE_KEY",
    "CODEASK_GITHUB_WEBHOOK_SECRET",
    "CODEASK_LLM_API_KEY",
}
# Identifiers only a real installation has: the production-like values must set them.
REQUIRED_IN_PRODUCTION = {"CODEASK_GITHUB_APP_ID", "CODEASK_GITHUB_INSTALLATION_ID"}
SECRET_CANARY = "xoxb-canary-0123456789"

Manifest = dict[str, Any]


def _helm() -> str:
    """The cached helm (scripts/helm.sh), else one on PATH; skips the test without either."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cached = Path(os.environ.get("CODEASK_BIN_DIR") or cache / "codeask" / "bin") / "helm"
    found = str(cached) if cached.exists() else shutil.which("helm")
    if found is None:
        pytest.skip("helm not installed: run `bash scripts/helm.sh install` (CI does)")
    return found


@pytest.fixture(scope="session")
def chart_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chart as it renders offline (the same preparation as ``scripts/helm.sh check``).

    Until ``helm dependency update`` fetched the optional OpenSearch chart, helm refuses to
    render a chart that declares it. A disabled subchart renders nothing, so a copy without
    the declaration renders the same manifests; its guard fails if values enable OpenSearch.
    """
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    vendored = {p.name.rsplit("-", 1)[0] for p in (CHART / "charts").glob("*.tgz")}
    if all(d["name"] in vendored for d in meta.get("dependencies", [])):
        return CHART
    copy = tmp_path_factory.mktemp("chart") / "codeask"
    shutil.copytree(CHART, copy)
    meta.pop("dependencies")
    (copy / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    (copy / "templates" / "zz-offline-guard.yaml").write_text(
        '{{- if .Values.opensearch.enabled }}{{ fail "run helm dependency update" }}{{- end }}\n'
    )
    return copy


@pytest.fixture(scope="session")
def render(chart_dir: Path) -> Callable[..., list[Manifest]]:
    def run(*args: str) -> list[Manifest]:
        result = subprocess.run(
            [_helm(), "template", "codeask", str(chart_dir), "--namespace", "codeask", *args],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return [d for d in yaml.safe_load_all(result.stdout) if d]

    return run


@pytest.fixture(scope="module", params=["defaults", "production"])
def manifests(
    request: pytest.FixtureRequest, render: Callable[..., list[Manifest]]
) -> list[Manifest]:
    if request.param == "production":
        return render("--values", str(PRODUCTION_VALUES))
    return render()


def _settings_classes() -> Iterator[type[BaseSettings]]:
    """Every BaseSettings subclass defined in the product packages (found by source scan)."""
    for package in SETTINGS_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text()
            if "BaseSettings" not in source:
                continue
            classes = {
                node.name
                for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.ClassDef)
                and any(ast.unparse(b).endswith("Settings") for b in node.bases)
            }
            if not classes:
                continue
            module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
            for name in sorted(classes):
                cls = getattr(module, name)
                if isinstance(cls, type) and issubclass(cls, BaseSettings):
                    yield cls


def _env_names(cls: type[BaseSettings]) -> set[str]:
    """The environment variables pydantic-settings reads for ``cls`` (aliases skip the prefix)."""
    prefix = str(cls.model_config.get("env_prefix") or "")
    names: set[str] = set()
    for field_name, field in cls.model_fields.items():
        alias = field.validation_alias or field.alias
        if isinstance(alias, AliasChoices):
            names.update(c for c in alias.choices if isinstance(c, str))
            paths = (c.path[0] for c in alias.choices if isinstance(c, AliasPath))
            names.update(p for p in paths if isinstance(p, str))
        elif isinstance(alias, str):
            names.add(alias)
        else:
            names.add(prefix + field_name)
    return {n.upper() for n in names}


SETTINGS_CLASSES = list(_settings_classes())
SETTINGS_ENV = set().union(*(_env_names(c) for c in SETTINGS_CLASSES))
CREDENTIAL_SETTINGS = {
    n for n in SETTINGS_ENV if n.startswith("CODEASK_") and SECRET_NAME.search(n)
}


def _kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def _pod_spec(workload: Manifest) -> dict[str, Any]:
    if workload["kind"] == "CronJob":
        return workload["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return workload["spec"]["template"]["spec"]


def _containers(manifests: list[Manifest]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for workload in manifests:
        if workload["kind"] in WORKLOADS:
            spec = _pod_spec(workload)
            for container in spec.get("initContainers", []) + spec["containers"]:
                yield workload["metadata"]["name"], spec, container


def _container_env(manifests: list[Manifest], container: dict[str, Any]) -> dict[str, Any]:
    """Env name -> source ({"value": …} or {"secretKeyRef": …} or {"configMap": name})."""
    config_maps = {
        m["metadata"]["name"]: m.get("data") or {} for m in _kind(manifests, "ConfigMap")
    }
    env: dict[str, Any] = {}
    for source in container.get("envFrom", []):
        ref = source.get("configMapRef")
        assert ref, f"only ConfigMaps are loaded whole, not {source}"
        assert ref["name"] in config_maps, f"envFrom names a missing ConfigMap {ref['name']}"
        env.update({k: {"configMap": ref["name"]} for k in config_maps[ref["name"]]})
    for item in container.get("env", []):
        env[item["name"]] = item.get("valueFrom") or {"value": item.get("value")}
    return env


def test_settings_classes_are_discovered() -> None:
    names = {c.__name__ for c in SETTINGS_CLASSES}
    assert {"IndexerSettings", "AclSettings", "BotSettings"} <= names
    assert {"CODEASK_STORE", "CODEASK_DATABASE_URL", "CODEASK_LLM_MODEL"} <= SETTINGS_ENV


def test_chart_renders_serve_worker_and_reconcile(manifests: list[Manifest]) -> None:
    rendered = {(m["kind"], m["metadata"]["name"]) for m in manifests}
    assert {
        ("Deployment", "codeask-serve"),
        ("Deployment", "codeask-worker"),
        ("CronJob", "codeask-reconcile"),
        ("Service", "codeask"),
        ("ConfigMap", "codeask"),
        ("ServiceAccount", "codeask"),
        ("PodDisruptionBudget", "codeask-serve"),
    } <= rendered
    args = {(name, c["name"]): c["args"] for name, _, c in _containers(manifests)}
    wait = ["db", "current", "--wait", "600"]
    assert args == {
        ("codeask-serve", "wait-for-migrations"): wait,
        ("codeask-serve", "serve"): ["serve"],
        ("codeask-worker", "wait-for-migrations"): wait,
        ("codeask-worker", "worker"): ["worker"],
        ("codeask-reconcile", "reconcile"): ["reconcile"],
        ("codeask-migrate", "migrate"): ["db", "upgrade"],
    }


def test_migrations_run_as_a_hook_before_upgrades_and_pods_wait_for_them(
    render: Callable[..., list[Manifest]],
) -> None:
    (job,) = _kind(render(), "Job")
    hooks = job["metadata"]["annotations"]
    assert hooks["helm.sh/hook"] == "post-install,pre-upgrade"
    assert "before-hook-creation" in hooks["helm.sh/hook-delete-policy"]
    assert _pod_spec(job)["restartPolicy"] == "Never"
    by_hand = render("--set", "migrations.enabled=false", "--set", "migrations.waitSeconds=0")
    assert not _kind(by_hand, "Job")
    assert not any(_pod_spec(d).get("initContainers") for d in _kind(by_hand, "Deployment"))


def test_chart_subcommands_exist(manifests: list[Manifest]) -> None:
    from typer.testing import CliRunner

    from bot.cli.app import app

    for name, _, container in _containers(manifests):
        command = [a for a in container["args"] if not a.startswith("-") and not a.isdigit()]
        result = CliRunner().invoke(app, [*command, "--help"])
        assert result.exit_code == 0, f"{name}: `codeask {' '.join(command)}` {result.output}"


def test_chart_commands_are_codeask_commands(manifests: list[Manifest]) -> None:
    from typer.main import get_command

    from bot.cli.app import app

    commands = set(get_command(app).commands)  # type: ignore[attr-defined]
    for name, _, container in _containers(manifests):
        assert container["args"][0] in commands, f"{name} runs an unknown command"


def test_every_codeask_env_in_the_chart_is_a_setting(manifests: list[Manifest]) -> None:
    for name, _, container in _containers(manifests):
        chart_env = {e for e in _container_env(manifests, container) if e.startswith("CODEASK_")}
        unknown = sorted(chart_env - SETTINGS_ENV)
        assert not unknown, f"{name} sets {unknown}, which no settings class reads"


def test_required_settings_and_every_credential_are_wired(manifests: list[Manifest]) -> None:
    required = REQUIRED_ALWAYS | CREDENTIAL_SETTINGS
    for name, _, container in _containers(manifests):
        missing = sorted(required - set(_container_env(manifests, container)))
        assert not missing, f"{name} does not wire {missing}"
    (config_map,) = _kind(manifests, "ConfigMap")
    assert config_map["data"]["CODEASK_STORE"] == "opensearch"


def test_production_values_configure_the_github_app(render: Callable[..., list[Manifest]]) -> None:
    production = render("--values", str(PRODUCTION_VALUES))
    (config_map,) = _kind(production, "ConfigMap")
    missing = sorted(k for k in REQUIRED_IN_PRODUCTION if not config_map["data"].get(k))
    assert not missing, f"production-like values leave {missing} unset"
    assert config_map["data"]["CODEASK_OPENSEARCH_VERIFY_CERTS"] == "true"


def test_credentials_come_from_secret_key_refs(manifests: list[Manifest]) -> None:
    for name, _, container in _containers(manifests):
        env = _container_env(manifests, container)
        for key in sorted(CREDENTIAL_SETTINGS | {"CODEASK_DATABASE_URL"}):
            ref = env.get(key, {}).get("secretKeyRef")
            assert ref, f"{name}: {key} must come from a Secret, not {env.get(key)}"
            assert ref["key"] == key
    for config_map in _kind(manifests, "ConfigMap"):
        leaked = [k for k in config_map.get("data") or {} if SECRET_NAME.search(k)]
        assert not leaked, f"credentials in the ConfigMap: {leaked}"


def test_existing_secret_replaces_the_chart_secret(render: Callable[..., list[Manifest]]) -> None:
    production = render("--values", str(PRODUCTION_VALUES))
    assert not _kind(production, "Secret"), "existingSecret: the chart must not create one"
    for name, _, container in _containers(production):
        refs = [e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e]
        assert refs and {r["name"] for r in refs} == {"codeask-credentials"}, name
        required = {r["key"]: r["optional"] for r in refs}
        assert required["CODEASK_DATABASE_URL"] is False
        assert required["CODEASK_SLACK_BOT_TOKEN"] is True, "Slack-less installs must start"


def test_secret_values_land_only_in_the_secret(render: Callable[..., list[Manifest]]) -> None:
    rendered = render("--set", f"secrets.CODEASK_SLACK_BOT_TOKEN={SECRET_CANARY}")
    holders = [m["kind"] for m in rendered if SECRET_CANARY in yaml.safe_dump(m)]
    assert holders == ["Secret"]
    (secret,) = _kind(rendered, "Secret")
    assert secret["stringData"]["CODEASK_SLACK_BOT_TOKEN"] == SECRET_CANARY


def test_pods_run_non_root_on_a_read_only_root_filesystem(manifests: list[Manifest]) -> None:
    for name, spec, container in _containers(manifests):
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] != 0, name
        assert spec["automountServiceAccountToken"] is False, name
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True, name
        assert security["allowPrivilegeEscalation"] is False, name
        assert security["capabilities"]["drop"] == ["ALL"], name


def test_every_path_codeask_writes_is_a_writable_volume(manifests: list[Manifest]) -> None:
    for name, spec, container in _containers(manifests):
        volumes = {v["name"]: v for v in spec["volumes"]}
        mounts = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
        assert all("emptyDir" in v for v in mounts.values()), name
        env = _container_env(manifests, container)
        config = {m["metadata"]["name"]: m["data"] for m in _kind(manifests, "ConfigMap")}
        data_dir = config[env["CODEASK_DATA_DIR"]["configMap"]]["CODEASK_DATA_DIR"]
        writable = ["/tmp", data_dir, env["HF_HOME"]["value"], env["XDG_CACHE_HOME"]["value"]]
        for path in writable:
            assert any(path == m or path.startswith(m + "/") for m in mounts), (name, path)
        assert env["HF_HUB_OFFLINE"] == {"value": "1"}, name


def test_serve_probes_health_endpoints_on_the_served_port(manifests: list[Manifest]) -> None:
    (serve,) = [
        m for m in _kind(manifests, "Deployment") if m["metadata"]["name"].endswith("-serve")
    ]
    (container,) = _pod_spec(serve)["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] in ports, probe
    (config_map,) = _kind(manifests, "ConfigMap")
    assert int(config_map["data"]["CODEASK_PORT"]) == ports["http"]
    (service,) = _kind(manifests, "Service")
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    selector = service["spec"]["selector"]
    labels = serve["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items(), "the Service must select the serve pods"
    assert selector["app.kubernetes.io/component"] == "serve"


def test_only_the_cronjob_reconciles(manifests: list[Manifest]) -> None:
    for name, _, container in _containers(manifests):
        env = _container_env(manifests, container)
        if name.endswith("-serve") and container["name"] == "serve":
            assert env["CODEASK_RECONCILE_SECONDS"] == {"value": "0"}


def test_production_values_expose_only_chat_and_webhook_paths(
    render: Callable[..., list[Manifest]],
) -> None:
    production = render("--values", str(PRODUCTION_VALUES))
    (ingress,) = _kind(production, "Ingress")
    paths = [p["path"] for r in ingress["spec"]["rules"] for p in r["http"]["paths"]]
    assert paths and not {"/", "/healthz", "/readyz"} & set(paths)
    assert ingress["spec"]["tls"], "Slack and Teams call HTTPS endpoints only"
    replicas = {
        m["metadata"]["name"]: m["spec"]["replicas"] for m in _kind(production, "Deployment")
    }
    assert replicas == {"codeask-serve": 3, "codeask-worker": 2}


def test_config_refuses_a_secret_or_chart_managed_key(chart_dir: Path) -> None:
    for setting in ("config.CODEASK_LLM_API_KEY=sk-test", "config.CODEASK_PORT=9000"):
        result = subprocess.run(
            [_helm(), "template", "codeask", str(chart_dir), "--set", setting],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode != 0, setting
        assert setting.split("=")[0] in result.stderr


def test_opensearch_chart_is_an_optional_pinned_dependency() -> None:
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    (dependency,) = meta["dependencies"]
    assert dependency["name"] == "opensearch"
    assert dependency["repository"] == "https://opensearch-project.github.io/helm-charts/"
    assert re.fullmatch(r"\d+\.\d+\.\d+", dependency["version"]), "pin an exact version"
    assert dependency["condition"] == "opensearch.enabled"
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["opensearch"]["enabled"] is False, "external OpenSearch is the default"
    production = yaml.safe_load(PRODUCTION_VALUES.read_text())
    assert not production.get("opensearch", {}).get("enabled", False)


def test_the_service_monitor_renders_only_when_enabled(
    render: Callable[..., list[Manifest]],
) -> None:
    assert not _kind(render(), "ServiceMonitor") and not _kind(render(), "PodMonitor")
    manifests = render("--set", "metrics.serviceMonitor.enabled=true")
    (monitor,) = _kind(manifests, "ServiceMonitor")
    assert not _kind(manifests, "PodMonitor")  # the worker has no listener by default
    (service,) = _kind(manifests, "Service")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert (
        endpoint["path"] == "/metrics" and endpoint["port"] == service["spec"]["ports"][0]["name"]
    )
    assert endpoint["bearerTokenSecret"]["key"] == "CODEASK_METRICS_TOKEN"


def test_a_worker_metrics_port_is_served_and_scraped(
    render: Callable[..., list[Manifest]],
) -> None:
    manifests = render(
        "--set", "metrics.serviceMonitor.enabled=true", "--set", "worker.metricsPort=9090"
    )
    (worker,) = [
        m for m in _kind(manifests, "Deployment") if m["metadata"]["name"].endswith("-worker")
    ]
    (container,) = _pod_spec(worker)["containers"]
    assert _container_env(manifests, container)["CODEASK_WORKER_METRICS_PORT"] == {"value": "9090"}
    assert {"name": "metrics", "containerPort": 9090, "protocol": "TCP"} in container["ports"]
    (monitor,) = _kind(manifests, "PodMonitor")
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"
    labels = worker["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_the_grafana_dashboard_queries_only_metrics_codeask_exports() -> None:
    import json

    from bot.metrics import Metrics
    from bot.settings import BotSettings

    dashboard = json.loads((CHART / "dashboards" / "codeask.json").read_text())
    exported = set(re.findall(r"^# TYPE (\w+)", Metrics(BotSettings()).render().decode(), re.M))
    exported |= {"codeask_index_lag_seconds", "codeask_index_commits_behind"}
    exported |= {"codeask_job_queue_depth", "codeask_job_queue_oldest_seconds"}
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            for name in re.findall(r"codeask_\w+", target["expr"]):
                base = re.sub(r"_(total|bucket|count|sum)$", "", name)
                assert name in exported or base in exported, name
