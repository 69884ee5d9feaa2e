#!/usr/bin/env bash
# Fails when a man page and the options its program accepts drift apart:
#  - every long option `PROGRAM --help` prints has an entry in the OPTIONS section of the man
#    page, and every entry there is an option PROGRAM accepts;
#  - the entry of an option that --help shows with an environment variable, "(Env:NAME)", names
#    that variable; with --check-defaults, the entry also says "Default: VALUE" for the default
#    --help shows ("=VALUE" after the type, or "(default VALUE)" in the description);
#  - every other `--option` the page and the given documents mention is an option of PROGRAM or
#    of an --also program (roff comments and Markdown ```console transcripts do not count: the
#    latter show other tools, curl above all, and were captured from real runs);
#  - the man page's .TH line carries the version `PROGRAM --version` prints.
#
#   options.sh [--check-defaults] [--also OTHER_PROGRAM]... PROGRAM MAN_PAGE [DOCUMENT...]
set -euo pipefail

exec python3 - "$@" <<'PY'
import os
import re
import subprocess
import sys

args = sys.argv[1:]
also, check_defaults = [], False
while args and args[0].startswith("--"):
    flag = args.pop(0)
    if flag == "--also":
        also.append(args.pop(0))
    elif flag == "--check-defaults":
        check_defaults = True
    else:
        sys.exit(f"options.sh: unknown flag {flag}")
program, page, documents = args[0], args[1], args[2:]
name = os.path.basename(program)
LONG = re.compile(r"--[a-z][a-z0-9-]*")


def run(prog, *argv):
    return subprocess.run([prog, *argv], check=True, capture_output=True, text=True).stdout


def help_entries(prog):
    """Long option -> the text of its --help entry (the option's line and its continuation)."""
    entries, current = {}, None
    for line in run(prog, "--help").splitlines():
        # "  --bind SRC DEST x 2   ..." and "  -h,--help   ...": the option column.
        m = re.match(r"^  (?:-[a-zA-Z], ?)?(--[a-z][a-z0-9-]*)(.*)", line)
        if m:
            current = m.group(1)
            entries[current] = m.group(2)
        elif current and line.startswith("      "):
            entries[current] += " " + line.strip()
        else:
            current = None
    return entries


help_options = help_entries(program)
if len(help_options) < 10:
    sys.exit(f"options.sh: read only {len(help_options)} options from '{program} --help'")
known = set(help_options)
for other in also:
    known |= set(help_entries(other))


def plain(roff):
    """roff text as a reader sees it, near enough for matching names and values."""
    roff = re.sub(r"\\f(\(..|\[[^]]*\]|.)", "", roff)
    roff = roff.replace("\\-", "-").replace("\\&", "").replace("\\~", " ").replace("\\e", "\\")
    roff = roff.replace("\\(lq", '"').replace("\\(rq", '"').replace("\\(aq", "'")
    return roff


text = open(page).read().splitlines()

# The entries of the OPTIONS section: a .TP (or .TQ) tag line naming the options, then the body
# up to the next entry, paragraph or section. Macro names are dropped from the body.
entries = {}  # option -> body text
tags, body, in_options, expect_tag = [], [], False, False


def close_entry():
    for tag in tags:
        entries[tag] = entries.get(tag, "") + " " + " ".join(body)


for line in text:
    if line.startswith(".SH "):
        close_entry()
        tags, body, expect_tag = [], [], False
        in_options = line.split()[1:] == ["OPTIONS"]
        continue
    if not in_options:
        continue
    words = line.split()
    macro = words[0] if line.startswith(".") and words else ""
    if expect_tag:
        tags += LONG.findall(plain(line))
        expect_tag = False
        continue
    if macro in (".TP", ".TQ"):
        if macro == ".TP":
            close_entry()
            tags, body = [], []
        expect_tag = True
    elif macro in (".SS", ".PP", ".LP", ".P"):
        close_entry()
        tags, body = [], []
    elif line.startswith('.\\"'):
        continue
    else:
        body.append(plain(line[len(macro):] if macro else line).replace('"', " "))
close_entry()

fail = False


def problem(message):
    global fail
    print(message, file=sys.stderr)
    fail = True


missing = sorted(set(help_options) - set(entries))
extra = sorted(set(entries) - set(help_options))
if missing:
    problem(f"{page}: options in '{name} --help' without an entry under OPTIONS: "
            f"{' '.join(missing)}")
if extra:
    problem(f"{page}: entries under OPTIONS that '{name} --help' does not list: {' '.join(extra)}")

for option, help_text in sorted(help_options.items()):
    if option not in entries:
        continue
    entry = " ".join(entries[option].split())
    env = re.search(r"\(Env:([A-Z0-9_]+)\)", help_text)
    if env and not re.search(rf"\b{env.group(1)}\b", entry):
        problem(f"{page}: the entry of {option} does not name its variable {env.group(1)}")
    if not check_defaults:
        continue
    default = re.match(r"\s+\S+?=(\S+)", help_text) or re.search(r"\(default (\S+?)\)", help_text)
    if default and not re.search(rf"Default: {re.escape(default.group(1))}(?![\w.:/-]*\w)", entry):
        problem(f"{page}: the entry of {option} does not say \"Default: {default.group(1)}\"")

# Every --option mentioned anywhere (examples, prose, other documents) must exist.
for doc in [page, *documents]:
    lines, in_console = [], False
    for line in open(doc).read().splitlines():
        if doc.endswith(".md") and line.lstrip().startswith("```"):
            in_console = not in_console and line.strip() == "```console"
            continue
        if in_console or line.startswith('.\\"'):
            continue
        lines.append(plain(line))
    unknown = sorted(set(LONG.findall("\n".join(lines))) - known)
    if unknown:
        problem(f"{doc}: mentions options {name} does not have: {' '.join(unknown)}")

version = run(program, "--version").strip()
if not any(re.match(rf'^\.TH .*"{re.escape(version)}"', line) for line in text):
    problem(f'{page}: the .TH line does not name "{version}" (from {name} --version)')

if fail:
    sys.exit(1)
print(f"options.sh: {len(help_options)} options documented in {page}")
PY
