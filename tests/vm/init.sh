#!/bin/sh
# The cgroup v2 VM's init (busybox sh, PID 1). It sets the VM up the way a cgroup v2 host looks
# to nestbox, runs the in-VM tests, prints one verdict line on the serial console for run-vm.sh
# and powers off.
#
# Not `set -e`: PID 1 must always reach the verdict and the power-off; an init that exits panics
# the kernel, which run-vm.sh would only see as "no verdict".
set -u

verdict() {
    echo "NESTBOX-VM-RESULT: $1"
    sync
    poweroff -f
}

# Stage 1: the initramfs cannot be pivot_root'ed away from (EINVAL: it is the namespace's
# absolute root), and nestbox pivot_roots into every sandbox. So the root is copied onto a tmpfs
# and switch_root'ed into, which frees the initramfs and runs this script again from there.
if [ "${1:-}" != "stage2" ]; then
    # The initramfs has no /dev/console for the kernel to give init as its stdio.
    mount -t devtmpfs devtmpfs /dev && exec </dev/console >/dev/console 2>&1
    mkdir -p /newroot && mount -t tmpfs -o mode=0755 root /newroot || verdict "fail: tmpfs root"
    for entry in /*; do
        case "$entry" in
            /newroot | /dev) mkdir -p "/newroot$entry" ;;
            *) cp -a "$entry" /newroot/ || verdict "fail: copying $entry" ;;
        esac
    done
    umount -l /dev
    exec switch_root /newroot /init stage2
fi

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# cgroup2 alone, where nestbox looks for it; the kernel runs with cgroup_no_v1=all.
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || verdict "fail: mounting cgroup2"
ip link set lo up 2>/dev/null
hostname nestbox-vm
echo "vm: $(uname -r), cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

# The tests run in a leaf group below a group without processes, as a service does under
# systemd (system.slice/x.service): nestbox's default parent is then tests/nestbox, beside it.
mkdir -p /sys/fs/cgroup/tests/runner
filter=$(sed -n 's/.*nestbox\.gtest_filter=\([^ ]*\).*/\1/p' /proc/cmdline)
status=0
sh -c 'echo 0 >/sys/fs/cgroup/tests/runner/cgroup.procs && exec "$@"' runner \
    env GTEST_COLOR=no NESTBOX=/vm/nestbox NESTBOX_PROBE=/vm/probe \
    /vm/vm_tests ${filter:+--gtest_filter=$filter} || status=$?

# --- nestboxd hook -------------------------------------------------------------------------------
# nestboxd does not exist yet. When it does, run-vm.sh gets it as an EXTRA_BINARY (it is
# dynamically linked; run-vm.sh copies its libraries), and this is where its cgroup v2 checks go:
#   - start it as PID 1 of a container would be: in a fresh cgroup, in a new cgroup and mount
#     namespace with cgroup2 mounted again (so its cgroup is the namespace's root, holding it);
#   - check that it moved itself into a leaf group and enabled memory, cpu and pids for its
#     sandboxes (its root group's cgroup.procs is empty, cgroup.subtree_control lists them);
#   - check that GET /healthz says "cgroup":"v2", and that a request with limits runs;
#   - set status=1 on any failure.
if [ -x /vm/nestboxd ]; then
    echo "vm: /vm/nestboxd is present but its checks are not written yet"
    status=1
fi
# --------------------------------------------------------------------------------------------------

if [ "$status" -eq 0 ]; then verdict pass; else verdict "fail: vm_tests exited with $status"; fi
