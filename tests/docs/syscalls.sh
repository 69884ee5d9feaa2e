#!/usr/bin/env bash
# Fails when the default seccomp profile and its table in nestbox-policy(5) drift apart: every
# rule of policy/profiles/default.json (each system call, its error or action, and the flag or
# request it is limited to) must have exactly one row in the table under DEFAULT PROFILE, and
# every row must be such a rule. So every system call the profile names appears in the page.
#
#   syscalls.sh DEFAULT_JSON POLICY_PAGE
set -euo pipefail

python3 - "$1" "$2" <<'PY'
import collections
import errno
import json
import re
import sys

profile_path, page_path = sys.argv[1], sys.argv[2]
profile = json.load(open(profile_path))

# The argument values the table names by their constant.
NAMED = {
    "CLONE_NEWUSER": 0x10000000, "CLONE_NEWNS": 0x00020000, "CLONE_NEWNET": 0x40000000,
    "CLONE_NEWPID": 0x20000000, "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWTIME": 0x00000080,
    "TIOCSTI": 0x5412, "TIOCLINUX": 0x541C,
}

def outcome(rule, action_key, errno_key):
    action = rule[action_key]
    if action == "SCMP_ACT_ERRNO":
        return errno.errorcode[rule.get(errno_key, errno.EPERM)]
    return action

def condition(rule):
    args = rule.get("args") or []
    if not args:
        return None
    if len(args) != 1:
        sys.exit(f"{profile_path}: a rule with {len(args)} conditions: extend syscalls.sh")
    a = args[0]
    return a["valueTwo"] if a["op"] == "SCMP_CMP_MASKED_EQ" else a.get("value", 0)

expected = collections.Counter()
for rule in profile["syscalls"]:
    names = rule.get("names", []) + ([rule["name"]] if "name" in rule else [])
    for name in names:
        expected[(name, outcome(rule, "action", "errnoRet"), condition(rule))] += 1

text = open(page_path).read()
section = re.search(r"^\.SH DEFAULT PROFILE\n(.*?)^\.SH ", text, re.M | re.S)
if not section:
    sys.exit(f"{page_path}: no DEFAULT PROFILE section")
section = section.group(1)
if profile["defaultAction"] not in section:
    sys.exit(f"{page_path}: DEFAULT PROFILE does not name the default action "
             f"{profile['defaultAction']}")
table = re.search(r"^\.TS\n(.*?)^\.TE$", section, re.M | re.S)
if not table:
    sys.exit(f"{page_path}: no table under DEFAULT PROFILE")
lines = table.group(1).splitlines()
tab = re.search(r"tab\((.)\)", lines[0]).group(1)
format_end = next(i for i, line in enumerate(lines) if line.endswith("."))

def plain(roff):
    return re.sub(r"\\f[BIRP]|\\&", "", roff).replace("\\-", "-").strip()

found = collections.Counter()
rows = [i for i in range(format_end + 1, len(lines)) if tab in lines[i]][1:]  # no header
for i in rows:
    cells = [plain(c) for c in lines[i].split(tab)]
    name, result = cells[0], cells[1]
    # A restricted rule's threat starts "With FLAG:"; the text follows its T{ line.
    threat_line = lines[i + 1] if cells[2] == "T{" else cells[2]
    m = re.match(r"With ([A-Z_]+):", plain(threat_line))
    cond = None
    if m:
        if m.group(1) not in NAMED:
            sys.exit(f"{page_path}: row '{name}' names {m.group(1)}, unknown to syscalls.sh")
        cond = NAMED[m.group(1)]
    found[(name, result, cond)] += 1

def show(key):
    name, result, cond = key
    flag = next((k for k, v in NAMED.items() if v == cond), cond)
    return f"{name} -> {result}" + (f" (with {flag})" if cond is not None else "")

ok = True
for key in sorted(expected - found, key=str):
    print(f"{page_path}: no table row for {show(key)} from {profile_path}", file=sys.stderr)
    ok = False
for key in sorted(found - expected, key=str):
    print(f"{page_path}: table row {show(key)} is not a rule of {profile_path}", file=sys.stderr)
    ok = False
if not ok:
    sys.exit(1)
print(f"syscalls.sh: {sum(expected.values())} rules of {profile_path} are in the table")
PY
