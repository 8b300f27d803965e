"""Making a container's image present before it is created: pull policy, pull secrets, pull back-off and
the events `kubectl describe pod` shows.

Upstream: pkg/kubelet/images/image_manager.go (EnsureImageExists, shouldPullImage), puller.go (one pull
at a time per call; serialized or parallel pulls are a kubelet setting there, here every pod worker pulls
in its own thread), kuberuntime_image.go PullImage (each matching credential tried in turn, errors
aggregated) and kubelet_pods.go getPullSecretsForPod. Steps, decided by `plan_image`:

  1. the image's local id (InvalidImageName and ImageInspectError stop here, event InspectFailed);
  2. pull policy (the API server defaults it: Always for `:latest` or no tag, else IfNotPresent; "" is
     defaulted again here for callers that skipped the API): no pull needed and present → Pulled
     "Container image \"x\" already present on machine"; Never and absent → ErrImageNeverPull, event
     ErrImageNeverPull;
  3. the pull back-off of (pod uid, image) (flowcontrol, 10 s doubling to 300 s by default): while it
     runs → ImagePullBackOff, event BackOff "Back-off pulling image \"x\"" (Normal, as upstream);
  4. Pulling "Pulling image \"x\"", the pod's pull secrets read through the API (missing ones → event
     FailedToRetrieveImagePullSecret, the pull goes on), the keyring's matching credentials tried in
     order (none → anonymous); failure → event Failed "Failed to pull image \"x\": <err>", the back-off
     advanced, ErrImagePull with the engine's message; success → Pulled "Successfully pulled image \"x\"
     in 212ms (212ms including waiting). Image size: N bytes.".

The pod sync adds upstream's second event of a failed start, Failed "Error: ErrImagePull" (or
ImagePullBackOff, ErrImageNeverPull), and shows the reason as the container's waiting reason.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any, Protocol

from control.api.defaults import image_pull_policy
from control.api.typed.core import Pod
from control.client.errors import ApiError
from nodeagent.credentials import CredentialError, keyring_from_secrets
from nodeagent.runtime.backoff import Backoff
from nodeagent.runtime.interface import (
    ImageInspectError,
    ImageNeverPullError,
    ImagePullBackOffError,
    ImagePullError,
    InvalidImageNameError,
    PulledImage,
    RegistryAuth,
)

log = logging.getLogger(__name__)

Event = Callable[[str, str, str], None]  # (type, reason, message) about one container of one pod


class ImageService(Protocol):
    """The runtime's image calls (nodeagent.runtime.interface.Runtime)."""

    def image_ref(self, image: str) -> str | None: ...

    def pull_image(self, image: str, auth: RegistryAuth | None) -> PulledImage: ...


class SecretGetter(Protocol):
    """Reads a Secret through the API server; raises control.client.errors.NotFound when it is absent."""

    def get_secret(self, namespace: str, name: str) -> dict[str, Any]: ...


class ImageStep(Enum):
    """What EnsureImageExists does for one container, given what is known before any pull."""

    USE_PRESENT = "UsePresent"
    NEVER_PULL = "NeverPull"  # policy Never and the image is absent
    BACK_OFF = "BackOff"
    PULL = "Pull"


def should_pull_image(policy: str, image: str, present: bool) -> bool:
    """upstream shouldPullImage: Never → no; Always → yes; IfNotPresent → when absent. An empty policy
    gets the API's default for the image first."""
    policy = policy or image_pull_policy(image)
    if policy == "Never":
        return False
    return policy == "Always" or not present


def plan_image(policy: str, image: str, *, present: bool, in_backoff: bool) -> ImageStep:
    if not should_pull_image(policy, image, present):
        return ImageStep.USE_PRESENT if present else ImageStep.NEVER_PULL
    return ImageStep.BACK_OFF if in_backoff else ImageStep.PULL


def go_duration_ms(seconds: float) -> str:
    """Go's Duration.String of a duration truncated to milliseconds: 0s, 212ms, 1.5s, 2m3.25s."""
    ms = max(0, int(seconds * 1000))
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs = f"{rest // 1000}.{rest % 1000:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{secs}"
    return f"{minutes}m{secs}" if minutes else secs


def aggregate(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate's text: the one error, or "[a, b]"."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def backoff_key(pod_uid: str, image: str) -> str:
    """upstream: fmt.Sprintf("%s_%s", pod.UID, container.Image)."""
    return f"{pod_uid}_{image}"


def pull_secrets(pod: Mapping[str, Any], getter: SecretGetter,
                 event: Callable[[str, str, str], None]) -> list[dict[str, Any]]:
    """upstream getPullSecretsForPod: the pod's imagePullSecrets that can be read (empty names skipped);
    those that cannot are named in one FailedToRetrieveImagePullSecret event and the pull goes on."""
    namespace = Pod(pod).metadata.namespace or "default"
    found: list[dict[str, Any]] = []
    failed: list[str] = []
    for ref in Pod(pod).spec.image_pull_secrets:
        name = ref.name
        if not name:
            continue
        try:
            found.append(getter.get_secret(namespace, name))
        except (ApiError, OSError) as exc:
            log.info("unable to retrieve pull secret %s/%s, the image pull may not succeed: %s", namespace, name, exc)
            failed.append(name)
    if failed:
        event("Warning", "FailedToRetrieveImagePullSecret", f"Unable to retrieve some image pull secrets "
              f"({', '.join(failed)}); attempting to pull the image may not succeed.")
    return found


class ImageManager:
    """EnsureImageExists over the runtime's image calls. Thread-safe: the back-off table has a lock; the
    pulls themselves run in the calling pod worker's thread."""

    def __init__(self, runtime: ImageService, secrets: SecretGetter, backoff: Backoff, *,
                 clock: Callable[[], float] = time.time, timer: Callable[[], float] = time.monotonic) -> None:
        self.runtime = runtime
        self.secrets = secrets
        self.backoff = backoff
        self.clock = clock
        self.timer = timer
        self._lock = threading.Lock()

    def ensure_image_exists(self, pod: Mapping[str, Any], container: Mapping[str, Any], event: Event) -> str:
        """The image id to create `container` from; raises the interface's image errors (their reason is
        the waiting reason) after recording upstream's events through `event`."""
        image = str(container.get("image") or "")
        try:
            present = self.runtime.image_ref(image)
        except InvalidImageNameError as exc:
            event("Warning", "InspectFailed", f"Failed to apply default image tag \"{image}\": {exc}")
            raise
        except ImageInspectError as exc:
            event("Warning", "InspectFailed", f"Failed to inspect image \"{image}\": {exc}")
            raise
        key = backoff_key(Pod(pod).metadata.uid, image)
        with self._lock:
            in_backoff = self.backoff.in_backoff(key, self.clock())
        step = plan_image(str(container.get("imagePullPolicy") or ""), image, present=present is not None,
                          in_backoff=in_backoff)
        if step is ImageStep.USE_PRESENT and present is not None:
            event("Normal", "Pulled", f"Container image \"{image}\" already present on machine")
            return present
        if step is ImageStep.NEVER_PULL:
            message = f"Container image \"{image}\" is not present with pull policy of Never"
            event("Warning", "ErrImageNeverPull", message)
            raise ImageNeverPullError(message)
        if step is ImageStep.BACK_OFF:
            message = f"Back-off pulling image \"{image}\""
            event("Normal", "BackOff", message)
            raise ImagePullBackOffError(message)
        event("Normal", "Pulling", f"Pulling image \"{image}\"")
        began = self.timer()
        try:
            pulled = self._pull(pod, image, event)
        except ImagePullError as exc:
            event("Warning", "Failed", f"Failed to pull image \"{image}\": {exc}")
            with self._lock:
                self.backoff.next(key, self.clock())
            raise
        took = go_duration_ms(self.timer() - began)
        event("Normal", "Pulled", f"Successfully pulled image \"{image}\" in {took} ({took} including waiting). "
                                  f"Image size: {pulled.size} bytes.")
        with self._lock:
            self.backoff.gc(self.clock())
        return pulled.id

    def _pull(self, pod: Mapping[str, Any], image: str, event: Event) -> PulledImage:
        """upstream kuberuntime PullImage: anonymous without matching credentials, else each in turn."""
        try:
            keyring = keyring_from_secrets(pull_secrets(pod, self.secrets, event))
        except CredentialError as exc:
            raise ImagePullError(str(exc)) from exc
        creds = keyring.lookup(image)
        if not creds:
            return self.runtime.pull_image(image, None)
        errors: list[str] = []
        for cred in creds:
            try:
                return self.runtime.pull_image(image, RegistryAuth(cred.username, cred.password, cred.email,
                                                                   cred.server_address))
            except ImagePullError as exc:
                errors.append(str(exc))
        raise ImagePullError(aggregate(errors))

    def retry_after(self, pod_uid: str, image: str) -> float:
        """Seconds until the pull back-off of (pod, image) ends: when the pod worker should sync again."""
        with self._lock:
            return self.backoff.remaining(backoff_key(pod_uid, image), self.clock()) or self.backoff.initial

    def gc(self) -> None:
        with self._lock:
            self.backoff.gc(self.clock())
