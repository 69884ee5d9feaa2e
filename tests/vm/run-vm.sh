#!/usr/bin/env bash
# The cgroup v2 VM test, host side: builds an initramfs from busybox, the binaries under test and
# the in-VM runner, boots Debian's cloud kernel on it under qemu (TCG: this machine has no KVM),
# and turns the verdict the VM prints on its serial console into this script's exit status.
#
#   run-vm.sh NESTBOX PROBE VM_TESTS INIT_SH [EXTRA_BINARY...]
#
# EXTRA_BINARY files land in /vm/ next to the others, with their shared libraries (nestboxd and
# its tests, vm_server_tests, are). Environment: NESTBOX_VM_KERNEL (default: the newest
# /boot/vmlinuz-*-cloud-amd64), NESTBOX_VM_TIMEOUT (seconds, default 270),
# NESTBOX_VM_GTEST_FILTER (given to each test program; one whose tests all miss it runs none).
#
# A missing tool or kernel is a failure, never a skip: this is the only place where the v2 path
# is exercised, and a CI run that silently skipped it would prove nothing.
set -euo pipefail

die() {
    echo "run-vm.sh: FAIL: $*" >&2
    exit 1
}

[ $# -ge 4 ] || die "usage: run-vm.sh NESTBOX PROBE VM_TESTS INIT_SH [EXTRA_BINARY...]"
nestbox=$1 probe=$2 vm_tests=$3 init_sh=$4
shift 4

qemu=$(command -v qemu-system-x86_64) ||
    die "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
busybox=/bin/busybox
[ -x "$busybox" ] || die "$busybox not found (apt-get install busybox-static)"
# A dynamically linked busybox would need its libraries in the VM's root; Debian's
# busybox-static is the one that runs there as it is.
if ldd "$busybox" >/dev/null 2>&1; then die "$busybox is dynamically linked: install busybox-static"; fi
kernel=${NESTBOX_VM_KERNEL:-}
if [ -z "$kernel" ]; then
    kernel=$(ls -1v /boot/vmlinuz-*-cloud-amd64 2>/dev/null | tail -n 1 || true)
fi
[ -n "$kernel" ] && [ -r "$kernel" ] ||
    die "no readable kernel (apt-get install linux-image-cloud-amd64, or set NESTBOX_VM_KERNEL)"
for f in "$nestbox" "$probe" "$vm_tests" "$init_sh" "$@"; do
    [ -r "$f" ] || die "$f not found"
done

work=$(mktemp -d /tmp/nestbox-vm-XXXXXX)
qemu_pid=
cleanup() {
    # Never leave a VM running, whatever ended this script.
    if [ -n "$qemu_pid" ]; then kill -KILL "$qemu_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

root=$work/root
# Debian's merged-/usr layout, so the sandbox's default root mirrors /bin, /sbin and /lib as
# symlinks exactly as it does on a Debian host.
mkdir -p "$root"/{usr/bin,usr/lib/x86_64-linux-gnu,usr/lib64,etc,proc,sys,dev,tmp,root,vm}
ln -s usr/bin "$root/bin"
ln -s usr/bin "$root/sbin"
ln -s bin "$root/usr/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/usr/bin/busybox"
for applet in $("$busybox" --list); do
    [ -e "$root/usr/bin/$applet" ] || ln -s busybox "$root/usr/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
    >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
printf '127.0.0.1 localhost\n' >"$root/etc/hosts"

# Copies a program into /vm and, if it is dynamically linked, every library ldd names, at the
# same path (the VM has no ld.so.cache, so the loader finds them by its default directories).
add_binary() {
    local src=$1 dest=$root/vm/$(basename "$1")
    install -m 0755 "$src" "$dest"
    local libs
    if ! libs=$(ldd "$src" 2>/dev/null); then return 0; fi  # static: nothing more to copy
    local lib
    for lib in $(awk '/=> \//{print $3} /^\t\//{print $1}' <<<"$libs"); do
        mkdir -p "$root$(dirname "$lib")"
        [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
    done
}
for bin in "$nestbox" "$probe" "$vm_tests" "$@"; do
    add_binary "$bin"
done
install -m 0755 "$init_sh" "$root/init"

initramfs=$work/initramfs.cpio
# Uncompressed: the kernel unpacks it faster than it would decompress it under TCG.
(cd "$root" && find . -mindepth 1 | "$busybox" cpio -o -H newc >"$initramfs" 2>/dev/null)

log=$work/console.log
timeout_s=${NESTBOX_VM_TIMEOUT:-270}
# cgroup_no_v1=all: no v1 controller can be mounted even by mistake, so every limit the VM tests
# see is enforced by cgroup v2. panic=-1 with -no-reboot: a kernel panic (init died) ends qemu.
append="console=ttyS0 quiet loglevel=3 panic=-1 cgroup_no_v1=all"
if [ -n "${NESTBOX_VM_GTEST_FILTER:-}" ]; then
    append+=" nestbox.gtest_filter=$NESTBOX_VM_GTEST_FILTER"
fi
echo "run-vm.sh: booting $kernel (TCG, timeout ${timeout_s}s)"
start=$SECONDS
"$qemu" -accel tcg -cpu max -smp 1 -m 768M -nodefaults -no-reboot -display none \
    -serial "file:$log" -kernel "$kernel" -initrd "$initramfs" -append "$append" &
qemu_pid=$!
# Shows the console as it comes, for whoever reads the test log, until qemu is gone.
tail -n +1 -F --pid="$qemu_pid" "$log" 2>/dev/null &
tail_pid=$!
deadline=$((SECONDS + timeout_s))
while kill -0 "$qemu_pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
    sleep 1
done
if kill -0 "$qemu_pid" 2>/dev/null; then
    kill -KILL "$qemu_pid"
    wait "$qemu_pid" 2>/dev/null || true
    qemu_pid=
    wait "$tail_pid" 2>/dev/null || true
    die "the VM did not finish within ${timeout_s}s"
fi
wait "$qemu_pid" || die "qemu failed (exit $?)"
qemu_pid=
wait "$tail_pid" 2>/dev/null || true
echo "run-vm.sh: the VM ran for $((SECONDS - start))s"

# The verdict is the last line init.sh prints; anything else (a panic, a hang, a runner that
# died) leaves none and fails.
verdict=$(tr -d '\r' <"$log" | sed -n 's/^NESTBOX-VM-RESULT: //p' | tail -n 1)
case "$verdict" in
    pass) echo "run-vm.sh: PASS" ;;
    "") die "the VM printed no verdict (see the console above)" ;;
    *) die "the VM reported: $verdict" ;;
esac
