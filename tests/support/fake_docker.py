"""An in-memory slice of docker's low-level `APIClient` for unit tests of the runtime, the PLEG and the
image helpers: containers as (list entry, inspect) pairs with the engine's errors (NotFound for a gone
container, APIError for a daemon that fails), `get_archive` serving the host files bind-mounted into a
container (as `docker cp` sees bind mounts), `logs`, and images that exist once imported."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator, Sequence

import docker.errors

T0 = "2026-01-01T00:00:0{}.000000001Z"


class FakeDockerAPI:
    """Containers and images; counts inspects, records imports; `fail_inspect`/`fail_list` inject errors."""

    def __init__(self, images: set[str] | None = None) -> None:
        self.items: dict[str, dict] = {}
        self.inspects: list[str] = []
        self.fail_inspect: set[str] = set()
        self.fail_list = False
        self.present: set[str] = set() if images is None else images
        self.imports: list[tuple[str | None, str | None, list[str] | None]] = []

    # ---- containers ----

    def add(self, cid: str, labels: dict, *, state: str = "running", exit_code: int = 0, second: int = 0,
            binds: Sequence[str] = ()) -> None:
        """A container; `binds` are Docker bind strings `host:container:mode`."""
        self.items[cid] = {"labels": labels, "state": state, "exit_code": exit_code, "created": T0.format(second),
                           "binds": list(binds)}

    def containers(self, all: bool = False, filters: dict | None = None) -> list[dict]:
        if self.fail_list:
            raise docker.errors.APIError("daemon down")
        key, value = (filters or {})["label"].split("=", 1)
        return [
            {"Id": cid, "Names": [f"/{cid}"], "Labels": c["labels"], "State": c["state"]}
            for cid, c in self.items.items()
            if c["labels"].get(key) == value
        ]

    def inspect_container(self, cid: str) -> dict:
        self.inspects.append(cid)
        if cid in self.fail_inspect or cid not in self.items:
            raise docker.errors.NotFound(f"no such container {cid}")
        c = self.items[cid]
        return {
            "Id": cid, "Created": c["created"], "Image": "sha256:img",
            "Config": {"Image": "busybox", "Labels": c["labels"]},
            "HostConfig": {"NetworkMode": "none", "Binds": c["binds"]},
            "State": {"Status": c["state"], "Running": c["state"] == "running", "ExitCode": c["exit_code"],
                      "OOMKilled": False, "StartedAt": c["created"], "FinishedAt": "0001-01-01T00:00:00Z"},
        }

    def get_archive(self, cid: str, path: str) -> tuple[Iterator[bytes], dict]:
        """A tar of the host file bind-mounted at `path`; NotFound for any other path."""
        for bind in self.items.get(cid, {}).get("binds", ()):
            host, container = bind.split(":")[:2]
            if container == path:
                try:
                    with open(host, "rb") as handle:
                        data = handle.read()
                except OSError:
                    break
                buffer = io.BytesIO()
                with tarfile.open(fileobj=buffer, mode="w") as tar:
                    info = tarfile.TarInfo(path.rsplit("/", 1)[-1])
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                return iter([buffer.getvalue()]), {"name": info.name, "size": len(data)}
        raise docker.errors.NotFound(f"no file {path} in {cid}")

    def logs(self, cid: str, **kwargs: object) -> bytes:
        return b"last words\n"

    # ---- images ----

    def inspect_image(self, image: str) -> dict:
        if image not in self.present:
            raise docker.errors.ImageNotFound(image)
        return {"Id": image}

    def import_image_from_data(self, data: bytes, repository: str | None = None, tag: str | None = None,
                               changes: list[str] | None = None) -> object:
        self.imports.append((repository, tag, changes))
        self.present.add(f"{repository}:{tag}")
        return None
