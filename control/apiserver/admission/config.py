"""The server's admission configuration file, `--admission-control-config-file` (upstream:
k8s.io/apiserver/pkg/admission/config.go `ReadAdmissionConfiguration`, the AdmissionConfiguration of
apiserver.config.k8s.io/v1).

The file names plugins with their configuration inline (`configuration:`) or in another file (`path:`,
relative to this one). Only the plugins that take a configuration here read theirs (PodSecurity's
PodSecurityConfiguration); a configuration for a plugin this server does not have is ignored, as upstream
ignores one for a plugin that is not enabled. Any other mistake stops the server from starting (ValueError).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from control.apiserver.admission import podsecurity

API_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.k8s.io/v1alpha1")


@dataclass(frozen=True, slots=True)
class AdmissionConfig:
    pod_security: podsecurity.Configuration = field(default_factory=podsecurity.Configuration)


def load(path: str | None) -> AdmissionConfig:
    """The configuration in the file at `path` (None: every plugin's defaults)."""
    if not path:
        return AdmissionConfig()
    document = _read(path)
    if document.get("apiVersion") not in API_VERSIONS or document.get("kind") != "AdmissionConfiguration":
        raise ValueError(f"{path}: expected an AdmissionConfiguration of {API_VERSIONS[0]}")
    plugins: dict[str, Mapping[str, Any]] = {}
    for entry in document.get("plugins") or []:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            raise ValueError(f"{path}: every plugins entry needs a name")
        configuration = entry.get("configuration")
        if configuration is None and entry.get("path"):
            configuration = _read(os.path.join(os.path.dirname(os.path.abspath(path)), str(entry["path"])))
        if not isinstance(configuration, Mapping):
            raise ValueError(f"{path}: plugin {entry['name']} has neither a configuration nor a path")
        plugins[str(entry["name"])] = configuration
    try:
        pod_security = podsecurity.parse_configuration(plugins["PodSecurity"]) if "PodSecurity" in plugins \
            else podsecurity.Configuration()
    except ValueError as exc:
        raise ValueError(f"{path}: PodSecurity: {exc}") from None
    return AdmissionConfig(pod_security=pod_security)


def _read(path: str) -> Mapping[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"reading {path}: {exc}") from None
    if not isinstance(document, Mapping):
        raise ValueError(f"{path}: not a YAML mapping")
    return document
