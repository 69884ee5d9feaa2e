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
# What udev or a container runtime adds to devtmpfs: nestboxd gives the launcher its policy as
# /dev/fd/3.
ln -s /proc/self/fd /dev/fd
# cgroup2 alone, where nestbox looks for it; the kernel runs with cgroup_no_v1=all.
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || verdict "fail: mounting cgroup2"
ip link set lo up 2>/dev/null
hostname nestbox-vm
echo "vm: $(uname -r), cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

# The tests run in a leaf group below a group without processes, as a service does under
# systemd (system.slice/x.service): nestbox's default parent is then tests/nestbox, beside it.
mkdir -p /sys/fs/cgroup/tests/runner
filter=$(sed -n 's/.*nestbox\.gtest_filter=\([^ ]*\).*/\1/p' /proc/cmdline)
failed=
# Runs a test program in /tests/runner with the binaries' paths in its environment.
run_tests() {
    sh -c 'echo 0 >/sys/fs/cgroup/tests/runner/cgroup.procs && exec "$@"' runner \
        env GTEST_COLOR=no NESTBOX=/vm/nestbox NESTBOX_PROBE=/vm/probe NESTBOXD=/vm/nestboxd \
        "$1" ${filter:+--gtest_filter=$filter} || failed="$failed $(basename "$1")"
}
run_tests /vm/vm_tests

# --- nestboxd hook -------------------------------------------------------------------------------
# With the server built, run-vm.sh passes nestboxd and its tests (nestboxd_test.cpp) as extra
# binaries. The tests start nestboxd themselves, the way each deployment does: as a container's
# PID 1 in its own cgroup, cgroup, mount and PID namespaces, as a service in a leaf group, and by
# hand from the root group.
if [ -e /vm/nestboxd ] || [ -e /vm/vm_server_tests ]; then
    if [ -x /vm/nestboxd ] && [ -x /vm/vm_server_tests ]; then
        run_tests /vm/vm_server_tests
    else
        echo "vm: nestboxd and vm_server_tests come together; one of them is missing"
        failed="$failed nestboxd-hook"
    fi
fi
# --------------------------------------------------------------------------------------------------

if [ -z "$failed" ]; then verdict pass; else verdict "fail:$failed"; fi
