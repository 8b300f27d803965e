"""The log backend: audit events as JSON lines in a file that rotates by size (upstream k8s.io/apiserver/
plugin/pkg/audit/log/backend.go over gopkg.in/natefinch/lumberjack.v2, behind the batching buffer of
plugin/pkg/audit/buffered).

Requests only queue an event (a bounded queue of 10,000, upstream's default buffer size; a full queue drops
the event with an error logged, as upstream's batch mode); one writer thread appends the queued lines and
flushes after each batch, so a slow disk never holds a request. `close` writes what is queued, then stops.

Rotation as lumberjack: before a line would take the file past `max_size_mb` (0: 100 MB) the file is renamed
to `<name>-<UTC time as 2006-01-02T15-04-05.000><ext>` and a new one (mode 0600) is opened; then backups past
`max_backups` (0: all kept) or older than `max_age_days` (0: no limit, by the time in their names) are removed.
The path `-` writes to standard output, never rotated.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO, Any

import orjson

log = logging.getLogger(__name__)

BUFFER_SIZE = 10_000
DEFAULT_MAX_SIZE_MB = 100
_BATCH = 1000
_TIME_FORMAT = "%Y-%m-%dT%H-%M-%S"


@dataclass(frozen=True, slots=True)
class LogOptions:
    """`--audit-log-path` and the rotation flags (`--audit-log-maxage`, `-maxbackup`, `-maxsize`)."""

    path: str
    max_age_days: int = 0
    max_backups: int = 0
    max_size_mb: int = 0


def backup_name(path: str, when: datetime) -> str:
    directory, filename = os.path.split(path)
    prefix, ext = os.path.splitext(filename)
    stamp = when.astimezone(UTC).strftime(_TIME_FORMAT) + f".{when.microsecond // 1000:03d}"
    return os.path.join(directory, f"{prefix}-{stamp}{ext}")


def backup_time(path: str, candidate: str) -> datetime | None:
    """The time in a backup's name, or None when `candidate` is not a backup of `path`."""
    prefix, ext = os.path.splitext(os.path.basename(path))
    name = os.path.basename(candidate)
    if not (name.startswith(prefix + "-") and name.endswith(ext)) or name == os.path.basename(path):
        return None
    stamp = name[len(prefix) + 1:len(name) - len(ext)]
    try:
        return datetime.strptime(stamp, _TIME_FORMAT + ".%f").replace(tzinfo=UTC)
    except ValueError:
        return None


def expired_backups(path: str, names: list[str], *, max_backups: int, max_age_days: int,
                    now: datetime) -> list[str]:
    """The backups lumberjack's millRun removes: beyond the newest `max_backups`, or older than the age."""
    dated = sorted(((when, name) for name in names if (when := backup_time(path, name)) is not None), reverse=True)
    doomed = []
    cutoff = now - timedelta(days=max_age_days)
    for index, (when, name) in enumerate(dated):
        if (max_backups and index >= max_backups) or (max_age_days and when < cutoff):
            doomed.append(name)
    return doomed


class RotatingFile:
    """lumberjack.Logger's write path: append, rotate before overflowing, prune backups."""

    def __init__(self, options: LogOptions, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.options = options
        self.max_bytes = (options.max_size_mb or DEFAULT_MAX_SIZE_MB) * 1024 * 1024
        self._clock = clock
        self._file: IO[bytes] | None = None
        self._size = 0

    def write(self, data: bytes) -> None:
        if self._file is None:
            self._open_existing(len(data))
        elif self._size + len(data) > self.max_bytes:
            self._rotate()
        assert self._file is not None
        self._file.write(data)
        self._size += len(data)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _open_existing(self, incoming: int) -> None:
        try:
            size = os.stat(self.options.path).st_size
        except FileNotFoundError:
            self._open_new()
            return
        if size + incoming > self.max_bytes:
            self._rotate()
            return
        self._file = open(self.options.path, "ab")  # held open across writes
        self._size = size

    def _open_new(self) -> None:
        directory = os.path.dirname(self.options.path) or "."
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd = os.open(self.options.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._file = os.fdopen(fd, "ab")
        self._size = 0

    def _rotate(self) -> None:
        self.close()
        if os.path.exists(self.options.path):
            os.replace(self.options.path, backup_name(self.options.path, self._clock()))
        self._open_new()
        self._prune()

    def _prune(self) -> None:
        if not (self.options.max_backups or self.options.max_age_days):
            return
        directory = os.path.dirname(self.options.path) or "."
        names = [os.path.join(directory, name) for name in os.listdir(directory)]
        for name in expired_backups(self.options.path, names, max_backups=self.options.max_backups,
                                    max_age_days=self.options.max_age_days, now=self._clock()):
            try:
                os.remove(name)
            except OSError as exc:
                log.warning("removing old audit log %s: %s", name, exc)


class _Stdout:
    def write(self, data: bytes) -> None:
        sys.stdout.buffer.write(data)

    def flush(self) -> None:
        sys.stdout.buffer.flush()

    def close(self) -> None:
        self.flush()


class LogBackend:
    """Queue events from the request path; one thread writes them."""

    def __init__(self, options: LogOptions) -> None:
        self.options = options
        self._sink: RotatingFile | _Stdout = _Stdout() if options.path == "-" else RotatingFile(options)
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=BUFFER_SIZE)
        self._thread: threading.Thread | None = None
        self.dropped = 0

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="audit-log", daemon=True)
            self._thread.start()

    def process(self, event: dict[str, Any]) -> None:
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1
            log.error("audit buffer queue blocked: dropped the event of %s %s", event.get("verb"),
                      event.get("requestURI"))

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._sink.close()

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < _BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            done = None in batch
            lines = b"".join(orjson.dumps(event) + b"\n" for event in batch if event is not None)
            try:
                if lines:
                    self._sink.write(lines)
                    self._sink.flush()
            except OSError as exc:
                log.error("writing the audit log %s failed: %s", self.options.path, exc)
            if done:
                return
