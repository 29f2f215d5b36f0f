"""The shipped proxy configuration (deploy/nginx.conf) does not serve /metrics to the
public: read from the file, and, where an nginx binary is at hand, with a real nginx in
front of a real server process."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support import REPO_ROOT, free_port, start_server_process

NGINX_CONF = REPO_ROOT / "deploy" / "nginx.conf"
METRICS_LOCATION = re.compile(r"location\s+(\^~|=)?\s*/metrics\s*\{([^{}]*)\}")


def test_the_proxy_config_refuses_metrics() -> None:
    text = NGINX_CONF.read_text()
    found = METRICS_LOCATION.findall(text)
    assert len(found) == 1, "deploy/nginx.conf needs one location for /metrics"
    modifier, body = found[0]
    # ^~ (or an exact match) wins over any regex location that could proxy it.
    assert modifier in ("^~", "=")
    assert re.search(r"return\s+40[34]\s*;|deny\s+all\s*;", body), body
    assert "proxy_pass" not in body


def nginx_binary() -> str | None:
    return os.environ.get("CRESCENT_TEST_NGINX") or shutil.which("nginx")


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as err:
        return err.code


def local_config(folder: Path, proxy_port: int, server_port: int) -> Path:
    """deploy/nginx.conf as shipped, pointed at a local server process and port, with
    its files in ``folder`` (the only changes)."""
    text = NGINX_CONF.read_text()
    text = re.sub(r"server server\d:8080[^;]*;", f"server 127.0.0.1:{server_port};", text)
    text = text.replace("listen 80;", f"listen 127.0.0.1:{proxy_port};")
    paths = "".join(
        f"    {kind}_temp_path {folder / kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    text = text.replace("http {\n", f"http {{\n    access_log off;\n{paths}", 1)
    text = f"pid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'};\n" + text
    conf = folder / "nginx.conf"
    conf.write_text(text)
    return conf


def test_a_real_nginx_does_not_pass_metrics(prefix: str, tmp_path: Path) -> None:
    nginx = nginx_binary()
    if nginx is None:
        pytest.skip("no nginx binary (apt-get install nginx-light, or CRESCENT_TEST_NGINX)")
    with start_server_process(prefix) as server:
        assert status_of(f"{server.http_url}/metrics") == 200  # the private network's
        proxy_port = free_port()
        conf = local_config(tmp_path, proxy_port, server.port)
        proc = subprocess.Popen(
            [nginx, "-p", str(tmp_path), "-c", str(conf), "-e", str(tmp_path / "error.log"),
             "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            proxy = f"http://127.0.0.1:{proxy_port}"
            deadline = time.monotonic() + 10
            while True:  # nginx says nothing when it listens: ask it
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                try:
                    if status_of(f"{proxy}/healthz") == 200:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, "nginx did not answer"
                time.sleep(0.05)
            for path in ("/metrics", "/metrics/", "/metrics?x=1", "//metrics", "/%6Detrics"):
                assert status_of(proxy + path) == 404, path
            assert status_of(f"{proxy}/") == 200  # the game is served
        finally:
            proc.terminate()
            proc.wait(10)
            if proc.stderr is not None:
                proc.stderr.close()
