"""Checks the deployment files for what nestboxd needs from them (suite deploy).

    validate.py kubernetes DIR     container/kubernetes: kinds, the native sidecar, probes,
                                   resources, the token Secret, the workspace claim, the
                                   NetworkPolicy closing the sidecar's port
    validate.py compose FILE       compose/docker-compose.yml, or what `podman-compose config`
                                   makes of it (container/test-compose.sh)

Structure only: whether a cluster or an engine runs them is the container suite's business (and
a cluster's). Each failure names the file and the property; the exit status is the count.
Runs with Debian's python3 and python3-yaml (/usr/bin/python3; the python3 on some PATHs lacks it).
"""

import pathlib
import sys

try:
    import yaml
except ImportError:
    sys.exit("validate.py: no yaml module: run it with /usr/bin/python3 (apt-get install python3-yaml)")

failures = []


def check(ok, where, what):
    print(("ok   " if ok else "FAIL ") + f"{where}: {what}")
    if not ok:
        failures.append(f"{where}: {what}")
    return ok


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def port_number(container, port):
    """A probe's port, by number or by the container's port name."""
    if isinstance(port, int):
        return port
    for p in container.get("ports", []):
        if p.get("name") == port:
            return p["containerPort"]
    return None


def mount_of(container, path):
    """The volumeMount that holds PATH (the longest mountPath that is a prefix of it)."""
    best = None
    for m in container.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"]):
                best = m
    return best


def kubernetes(directory):
    d = pathlib.Path(directory)
    docs = {}
    for f in sorted(d.glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if doc:
                docs.setdefault(doc["kind"], []).append((f.name, doc))
    kinds = set(docs)
    check({"Deployment", "NetworkPolicy", "PersistentVolumeClaim", "Kustomization"} <= kinds,
          d.name, f"has a Deployment, a NetworkPolicy, a PersistentVolumeClaim and a Kustomization (got {sorted(kinds)})")
    (kf, kust), = docs["Kustomization"]
    listed = set(kust.get("resources", []))
    files = {f.name for f in d.glob("*.yaml")} - {kf}
    check(listed == files, kf, f"lists every manifest (listed {sorted(listed)}, present {sorted(files)})")

    (df, dep), = docs["Deployment"]
    pod = dep["spec"]["template"]["spec"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    check(dep["spec"]["selector"]["matchLabels"].items() <= labels.items(), df,
          "the selector matches the pod template's labels")
    sidecars = [c for c in pod.get("initContainers", []) if c["name"] == "nestboxd"]
    if not check(len(sidecars) == 1, df, "nestboxd is an init container"):
        return
    s = sidecars[0]
    check(s.get("restartPolicy") == "Always", df,
          "nestboxd is a native sidecar (initContainers[].restartPolicy: Always)")
    check(s.get("securityContext", {}).get("privileged") is True, df,
          "nestboxd is privileged (namespaces, mounts, a writable cgroupfs)")
    env = env_of(s)
    listen = env.get("NESTBOX_LISTEN", "0.0.0.0:9090")
    port = int(listen.rsplit(":", 1)[1])
    check(listen.startswith("0.0.0.0:") or listen.startswith("[::]:"), df,
          f"nestboxd listens on the pod's addresses, where the kubelet's probes arrive ({listen})")
    check(any(p["containerPort"] == port for p in s.get("ports", [])), df,
          f"nestboxd declares its port {port}")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = s.get(probe, {}).get("httpGet", {})
        check(p.get("path") == "/healthz" and port_number(s, p.get("port")) == port, df,
              f"nestboxd's {probe} is GET /healthz on port {port}")
    for c in pod.get("initContainers", []) + pod["containers"]:
        r = c.get("resources", {})
        check({"cpu", "memory"} <= set(r.get("requests", {})) and
              {"cpu", "memory"} <= set(r.get("limits", {})), df,
              f"{c['name']} has cpu and memory requests and limits")

    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    token_file = env.get("NESTBOX_TOKEN_FILE")
    if check(bool(token_file), df, "nestboxd has NESTBOX_TOKEN_FILE (it listens beyond loopback)"):
        m = mount_of(s, token_file)
        v = volumes.get(m["name"], {}) if m else {}
        check("secret" in v and bool(v["secret"].get("secretName")), df,
              f"the token file {token_file} comes from a Secret")
    root = env.get("NESTBOX_WORKSPACE_ROOT", "./workspaces")
    m = mount_of(s, root)
    claim = volumes.get(m["name"], {}).get("persistentVolumeClaim", {}).get("claimName") if m else None
    claims = {doc["metadata"]["name"] for _, doc in docs["PersistentVolumeClaim"]}
    check(claim in claims, df, f"the workspace root {root} is the claim defined here ({claim})")

    cps = [c for c in pod["containers"] if c["name"] != "nestboxd"]
    for c in cps:
        cenv = env_of(c)
        check(cenv.get("WAIT_FOR_SIDECAR") == f"localhost:{port}", df,
              f"{c['name']} waits for the sidecar (WAIT_FOR_SIDECAR=localhost:{port})")
        check(mount_of(c, root) is None, df, f"{c['name']} has no workspace mount")
        check(not c.get("securityContext", {}).get("privileged"), df, f"{c['name']} is not privileged")

    for nf, np in docs["NetworkPolicy"]:
        spec = np["spec"]
        selects = spec["podSelector"].get("matchLabels", {}).items() <= labels.items()
        check(selects, nf, "selects the pod that runs the sidecar")
        check("Ingress" in spec.get("policyTypes", []), nf, "is an ingress policy")
        sidecar_ports = {port} | {p.get("name") for p in s.get("ports", [])}
        open_rules = [r for r in spec.get("ingress", []) if not r.get("ports")]
        admitted = {p.get("port") for r in spec.get("ingress", []) for p in r.get("ports", [])}
        check(not open_rules and not (admitted & sidecar_ports), nf,
              f"admits no ingress to the sidecar's port {port} (admits {sorted(map(str, admitted))})")


def compose(path):
    c = yaml.safe_load(pathlib.Path(path).read_text())
    f = pathlib.Path(path).name
    services = c.get("services", {})
    s, cps = services.get("nestboxd"), [v for k, v in services.items() if k != "nestboxd"]
    if not check(s is not None and len(cps) >= 1, f, "has the nestboxd sidecar and a control plane"):
        return
    check(s.get("privileged") is True, f, "nestboxd is privileged")
    check(s.get("cgroup") == "private", f, "nestboxd has a private cgroup namespace")
    env = s.get("environment", {})
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    listen = env.get("NESTBOX_LISTEN", "0.0.0.0:9090")
    port = listen.rsplit(":", 1)[1]
    secret_files = {name: spec for name, spec in (c.get("secrets") or {}).items() if "file" in spec}
    names = [x if isinstance(x, str) else x.get("source") for x in s.get("secrets", [])]
    token = env.get("NESTBOX_TOKEN_FILE", "")
    check(any(token == f"/run/secrets/{n}" and n in secret_files for n in names), f,
          f"the token file {token or '(none)'} is a file secret mounted at /run/secrets")
    root = env.get("NESTBOX_WORKSPACE_ROOT", "/mnt/workspace")
    vols = s.get("volumes", [])
    named = set(c.get("volumes") or {})
    check(any(v.split(":")[0] in named and v.split(":")[1] == root for v in vols if isinstance(v, str)), f,
          f"the workspace root {root} is a named volume")
    shared = [v for v in vols if isinstance(v, str) and v.endswith(":ro")]
    check(bool(shared) and all(v.split(":")[1] in env.get("SHARED_DIRS", "") for v in shared), f,
          "the shared dirs are mounted read-only and listed in SHARED_DIRS")
    hc = s.get("healthcheck", {}).get("test", [])
    check("--healthcheck" in hc and any(str(x).endswith(":" + port) for x in hc), f,
          f"the healthcheck probes /healthz on port {port}")
    check(not s.get("ports"), f, "nestboxd publishes no port")
    for cp in cps:
        cenv = cp.get("environment", {})
        check(cenv.get("WAIT_FOR_SIDECAR") == f"nestboxd:{port}", f,
              "the control plane waits for the sidecar (WAIT_FOR_SIDECAR)")
        check(not any(str(v).split(":")[1:2] == [root] for v in cp.get("volumes", [])), f,
              "the control plane has no workspace mount")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("kubernetes", "compose"):
        sys.exit(__doc__)
    (kubernetes if sys.argv[1] == "kubernetes" else compose)(sys.argv[2])
    print(f"{len(failures)} failure(s)")
    sys.exit(len(failures))
