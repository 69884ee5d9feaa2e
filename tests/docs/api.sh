#!/usr/bin/env bash
# Fails when docs/api.md and nestboxd's routes or error codes drift apart:
#  - every route of the native route table (router.cpp, kRoutes) and of the compatibility surface
#    (compat.cpp: the paths route_compat() compares and the prefixes of kPrefixed) has a heading
#    "METHOD /path" in docs/api.md ("GET /download/{path}" for a prefix), and every such heading
#    is a route;
#  - every error code the server sources give an ApiError, with its status, is a row
#    "| STATUS | `code` |" of the error table, and every row of it is such a pair.
# The routes and codes are read from the sources, so a new one fails this test until it is
# documented; if the sources change shape so that fewer are found, the test fails too.
#
#   api.sh SERVER_SOURCE_DIR API_MD
set -euo pipefail

exec python3 - "$@" <<'PY'
import glob
import os
import re
import sys

src, doc_path = sys.argv[1], sys.argv[2]
read = lambda name: open(os.path.join(src, name)).read()
doc = open(doc_path).read()
fail = False


def problem(message):
    global fail
    print(message, file=sys.stderr)
    fail = True


# --- routes ------------------------------------------------------------------------------------
routes = set()  # (METHOD, path); a path ending in "/" is a prefix route
table = re.search(r"kRoutes\[\]\s*=\s*\{(.*?)\n\};", read("router.cpp"), re.S)
if table:
    for path, verb in re.findall(r'\{"(/[^"]*)",\s*http::verb::(\w+)', table.group(1)):
        routes.add((verb.upper(), path))
native = len(routes)

compat = read("compat.cpp")
body = re.search(r"route_compat\(App& app, Exchange& ex\) \{(.*)", compat, re.S)
if body:
    body = body.group(1)
    default = re.search(r"http::verb wanted = http::verb::(\w+);", body)
    # Each `path == "/x"` branch runs to the next `}`; it may set `wanted`.
    for path, branch in re.findall(r'path == "(/[^"]*)"\) \{(.*?)\}', body, re.S):
        verb = re.search(r"wanted = http::verb::(\w+);", branch) or default
        if verb:
            routes.add((verb.group(1).upper(), path))
    prefixed = re.search(r"kPrefixed\[\]\s*=\s*\{(.*?)\};", body, re.S)
    if prefixed and default:
        for prefix in re.findall(r'\{"(/[^"]*/)",\s*\w+\}', prefixed.group(1)):
            routes.add((default.group(1).upper(), prefix))
if native < 8 or len(routes) - native < 6:
    sys.exit(f"api.sh: found only {native} native and {len(routes) - native} compatibility "
             f"routes in {src}/router.cpp and compat.cpp; has the route table changed shape?")

documented = set(re.findall(r"^#{2,4} `?(GET|POST|PUT|PATCH|DELETE|HEAD) (/\S*?)`?$", doc, re.M))


def matches(route, heading):
    (method, path), (doc_method, doc_path) = route, heading
    if method != doc_method:
        return False
    if path.endswith("/") and path != "/":
        return re.fullmatch(re.escape(path) + r"\{[a-z_]+\}", doc_path) is not None
    return path == doc_path


for route in sorted(routes):
    if not any(matches(route, h) for h in documented):
        shown = route[1] + ("{path}" if route[1].endswith("/") and route[1] != "/" else "")
        problem(f"{doc_path}: no heading '{route[0]} {shown}' for a route of the server")
for heading in sorted(documented):
    if not any(matches(r, heading) for r in routes):
        problem(f"{doc_path}: heading '{heading[0]} {heading[1]}' is not a route of the server")

# --- error codes -------------------------------------------------------------------------------
STATUS = {
    "bad_request": 400, "unauthorized": 401, "forbidden": 403, "not_found": 404,
    "method_not_allowed": 405, "request_timeout": 408, "payload_too_large": 413,
    "unprocessable_entity": 422, "too_many_requests": 429, "request_header_fields_too_large": 431,
    "internal_server_error": 500, "service_unavailable": 503,
}
codes = set()  # (status, code)
sources = sorted(glob.glob(os.path.join(src, "*.cpp")) + glob.glob(os.path.join(src, "*.hpp")))
for path in sources:
    text = open(path).read()
    # {http::status::S, "code", ...} and the ternary form
    # {c ? http::status::S1 : http::status::S2, c ? "code1" : "code2", ...}.
    for s1, s2, c1, c2 in re.findall(
            r'http::status::(\w+)(?:\s*:\s*http::status::(\w+))?\s*,\s*(?:\w+\s*\?\s*)?'
            r'"([a-z_]+)"(?:\s*:\s*"([a-z_]+)")?', text):
        for status, code in ((s1, c1), (s2, c2)):
            if status and code:
                if status not in STATUS:
                    problem(f"{path}: api.sh does not know the status http::status::{status}")
                    continue
                codes.add((STATUS[status], code))
    # ApiError::bad_request("code", ...) and ApiError::not_found("code", ...).
    for helper, code in re.findall(r'\b(bad_request|not_found)\(\s*"([a-z_]+)"', text):
        codes.add((STATUS[helper], code))
if len(codes) < 15:
    sys.exit(f"api.sh: found only {len(codes)} error codes in {src}; has ApiError changed shape?")

table = set((int(s), c) for s, c in re.findall(r"^\| (\d{3}) \| `([a-z_]+)` \|", doc, re.M))
for status, code in sorted(codes - table):
    problem(f"{doc_path}: no row '| {status} | `{code}` |' in the error table")
for status, code in sorted(table - codes):
    problem(f"{doc_path}: error table row '| {status} | `{code}` |' is not an error of the server")

if fail:
    sys.exit(1)
print(f"api.sh: {len(routes)} routes and {len(codes)} error codes documented in {doc_path}")
PY
