"""A stand-in control plane: calls the nestboxd sidecar once for each kind of request an agent
platform makes, prints what came back, and exits 0 if every answer was right (1 otherwise).

Started by nestbox-entrypoint after WAIT_FOR_SIDECAR saw /healthz answer 200. Standard library
only. Environment: NESTBOX_URL (http://nestboxd:9090), NESTBOX_TOKEN_FILE, AGENT_ID (demo).
"""

import json
import os
import sys
import urllib.error
import urllib.request

URL = os.environ.get("NESTBOX_URL", "http://nestboxd:9090").rstrip("/")
AGENT = os.environ.get("AGENT_ID", "demo")
with open(os.environ.get("NESTBOX_TOKEN_FILE", "/run/secrets/nestbox-token")) as f:
    TOKEN = f.read().strip()


def call(method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + TOKEN)
    req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


failures = 0


def expect(what, ok, answer):
    global failures
    print(("ok   " if ok else "FAIL ") + what + ": " + json.dumps(answer)[:300], flush=True)
    failures += 0 if ok else 1


status, health = call("GET", "/healthz")
expect("GET /healthz", status == 200 and health["status"] == "ok", health)

status, r = call("POST", "/workspace/write",
                 {"agent_id": AGENT, "path": "hello.py", "content": "print('hello from', __name__)\n"})
expect("POST /workspace/write", status == 200, r)

status, r = call("POST", "/exec", {"agent_id": AGENT, "command": "python3 hello.py && id -u",
                                   "timeout_sec": 60})
expect("POST /exec", status == 200 and r["exit_code"] == 0
       and r["stdout"].startswith("hello from __main__"), r)

status, r = call("POST", "/workspace/read", {"agent_id": AGENT, "path": "shared/README"})
expect("POST /workspace/read (shared, read-only)", status == 200, r)

status, r = call("POST", "/execute", {"command": "ls"}, {"X-Agent-Id": AGENT})
expect("POST /execute (agent-sandbox runtime API)", status == 200 and "hello.py" in r["stdout"], r)

print("control plane: %d failure(s)" % failures, flush=True)
sys.exit(1 if failures else 0)
