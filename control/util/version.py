"""The one version string every component reports (`/version`, nodeInfo.kubeletVersion, `slimkube version`).

The Kubernetes version is what the API server claims to serve: kubectl compares it with its own and
warns when they are more than one minor apart, so it names the API level slimkube implements.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

try:
    SLIMKUBE_VERSION = _dist_version("slimkube")
except PackageNotFoundError:  # running from a source tree that was never installed
    SLIMKUBE_VERSION = "0.0.0+source"

KUBERNETES_MAJOR = "1"
KUBERNETES_MINOR = "30"
KUBERNETES_VERSION = f"v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0-slimkube.{SLIMKUBE_VERSION}"
