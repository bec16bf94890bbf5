"""The push itself: Prometheus text format 0.0.4 over the Pushgateway API.

    body = render([Sample("gpu_allocator_reserved_bytes", {"gpu_uuid": "GPU-1"}, 2e9)])
    status = put("http://127.0.0.1:9400", "gpulens_client", os.getpid(), body, timeout=2.0)

The grouping key is /metrics/job/<job>/pid/<pid>: one group per process, so
a PUT replaces everything the process said before, and the agent drops the
group when the process is gone. The same request works against a real
Pushgateway. Only the standard library is used.
"""

import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .stats import COUNTER_METRICS


@dataclass
class Sample:
    name: str
    labels: Dict[str, str] = field(default_factory=dict)
    value: float = 0.0


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == int(v) and abs(v) < 2**63:
        return str(int(v))
    return repr(v)


def render(samples: List[Sample]) -> str:
    """Text format 0.0.4: one # TYPE line per family before its samples,
    every line ending in "\\n", no timestamps (a Pushgateway refuses them)."""
    families: Dict[str, List[Sample]] = {}
    for s in samples:
        families.setdefault(s.name, []).append(s)
    out = []
    for name, members in families.items():
        out.append("# TYPE %s %s\n" % (name, "counter" if name in COUNTER_METRICS else "gauge"))
        for s in members:
            labels = ",".join('%s="%s"' % (k, _escape(str(v))) for k, v in sorted(s.labels.items()))
            out.append("%s%s %s\n" % (name, "{" + labels + "}" if labels else "", _number(s.value)))
    return "".join(out)


def group_url(base: str, job: str, pid: int) -> str:
    base = base.rstrip("/")
    if "://" not in base:
        base = "http://" + base
    return "%s/metrics/job/%s/pid/%d" % (base, urllib.parse.quote(job, safe=""), pid)


def put(base: str, job: str, pid: int, body: str, timeout: float, token: Optional[str] = None) -> Tuple[int, str]:
    """PUTs `body` as the process's group; returns the HTTP status and the
    answer's text. Raises OSError (urllib.error.URLError included) when the
    agent cannot be reached."""
    return _send("PUT", group_url(base, job, pid), body.encode(), timeout, token)


def delete(base: str, job: str, pid: int, timeout: float, token: Optional[str] = None) -> Tuple[int, str]:
    """Removes the process's group (at exit)."""
    return _send("DELETE", group_url(base, job, pid), None, timeout, token)


def _send(method: str, url: str, data: Optional[bytes], timeout: float, token: Optional[str]) -> Tuple[int, str]:
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(4096).decode("utf-8", "replace")
    except urllib.error.HTTPError as e:  # an answer: 4xx/5xx
        try:
            return e.code, e.read(4096).decode("utf-8", "replace")
        finally:
            e.close()
