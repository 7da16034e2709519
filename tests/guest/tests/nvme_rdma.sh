#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: NVMe over RDMA through the driver under test: nvmet exports a 64 MiB RAM disk on an RDMA port at 192.0.2.1:4420, nvme connect -t rdma from the same guest; 8 MiB of random data written through the namespace, read back and found on the RAM disk (checksums), ext4 made on it and a file round trip, disconnect and reconnect (the file still there), then the target's port removed under a write: the write fails within the controller-loss timeout (5 s) and a margin of 25 s instead of hanging; dmesg free of kernel reports
# lab-timeout: 600
# lab-versions: 17,18
# lab-runs-last: loads nvmet-rdma and nvme-rdma, which stay loaded as RDMA clients of every device after
. "$LAB_DIR/lib.sh"

R=$LAB_RESULTS
log() { lab_note "$*"; }
. "$LAB_DIR/modules.sh"
. "$LAB_DIR/nvmeof.sh"
nvmeof_load ext4
nvmeof_target_up

sum() { sha256sum "$1" | cut -d' ' -f1; }
connect() {
	nvmeof_connect
	dev=$NVMEOF_DEV
}

connect
lab_note "connected: $dev"

# Raw data: written through the namespace, read back through it, and found
# on the target's RAM disk (the bytes went over RDMA both ways).
dd if=/dev/urandom of=/tmp/data bs=1M count=8 2>/dev/null || lab_fail "no random data"
timeout 120 dd if=/tmp/data of="$dev" bs=1M oflag=direct 2>"$LAB_RESULTS/dd-write.txt" ||
	lab_fail "writing 8 MiB to $dev failed: $(lab_tail "$LAB_RESULTS/dd-write.txt")"
timeout 120 dd if="$dev" of=/tmp/back bs=1M count=8 iflag=direct 2>"$LAB_RESULTS/dd-read.txt" ||
	lab_fail "reading 8 MiB from $dev failed: $(lab_tail "$LAB_RESULTS/dd-read.txt")"
dd if=/dev/ram0 of=/tmp/target bs=1M count=8 2>/dev/null || lab_fail "cannot read /dev/ram0"
want=$(sum /tmp/data)
[ "$(sum /tmp/back)" = "$want" ] || lab_fail "8 MiB read back through $dev differ from what was written"
[ "$(sum /tmp/target)" = "$want" ] || lab_fail "the RAM disk behind $NVMEOF_NQN does not hold what was written through $dev"
lab_summary "NVMe/RDMA raw: 8 MiB written and read back through $dev, the same on the target's RAM disk (sha256 $want)"

# A file system on it, a file, a reconnect, the file again.
mkdir -p /tmp/mnt
timeout 120 mkfs.ext4 -q -F "$dev" >"$LAB_RESULTS/mkfs.txt" 2>&1 || lab_fail "mkfs.ext4 $dev: $(lab_tail "$LAB_RESULTS/mkfs.txt")"
mount -t ext4 "$dev" /tmp/mnt || lab_fail "mount $dev"
cp /tmp/data /tmp/mnt/file && sync || lab_fail "writing a file on $dev"
umount /tmp/mnt || lab_fail "umount $dev"
nvmeof_disconnect
connect
mount -t ext4 "$dev" /tmp/mnt || lab_fail "mount $dev after reconnecting"
[ "$(sum /tmp/mnt/file)" = "$want" ] || lab_fail "the file on ext4 over NVMe/RDMA changed across a reconnect"
umount /tmp/mnt || lab_fail "umount $dev"
lab_summary "NVMe/RDMA ext4: a file of 8 MiB written, the controller disconnected and connected again ($dev), the file read back unchanged"

# The target goes away under a write: the host must give up within its
# controller-loss timeout, not hang. That timeout is no timer: it is
# NVMEOF_CTRL_LOSS_TMO / NVMEOF_RECONNECT_DELAY reconnect attempts (5) one
# delay (1 s) apart (the kernel's max_reconnects, drivers/nvme/host/fabrics.c),
# after which the controller is deleted and the write fails. So the 5 s come
# with the error recovery's teardown, each attempt's address and route
# resolution and its connection request, which the target's CM refuses (the
# port stopped listening with its last subsystem), and the controller's
# deletion. The margin: 25 s for that work on a debug kernel under TCG, up to
# 5 s an attempt. It is far below the cost of a host that does not keep to
# the timeout: an attempt waiting on a connection request that nobody answers
# takes up to rdma_cm's 15 retries of about 4 s (CMA_CM_RESPONSE_TIMEOUT), the
# kernel's own ctrl-loss-tmo is 600 s, and the write's own limit here 120 s.
loss_margin=25
loss_limit=$((NVMEOF_CTRL_LOSS_TMO + loss_margin))
# The device's count of completed writes (/sys/block/*/stat, field 5).
writes() { awk '{ print $5 }' "/sys/block/${dev#/dev/}/stat" 2>/dev/null; }
writes_before=$(writes)
timeout 120 dd if=/dev/zero of="$dev" bs=1M count=48 oflag=direct 2>"$LAB_RESULTS/dd-lost.txt" &
writer=$!
# The target goes once the first of the write's requests has completed, or
# after 1 s, whichever comes first: the write is under way, nearly 48 MiB to
# go, and must still be running (a write that completed lost nothing).
n=10
while [ "$(writes)" = "$writes_before" ] && [ "$n" -gt 0 ]; do
	sleep 0.1
	n=$((n - 1))
done
lab_alive "$writer" || {
	wait "$writer"
	lab_fail "the write to $dev ended (status $?) before its target was removed: no write was under way to lose it: $(lab_tail "$LAB_RESULTS/dd-lost.txt")"
}
rm "$NVMEOF_PORT/subsystems/$NVMEOF_NQN" || lab_fail "cannot remove $NVMEOF_NQN from the port"
t0=$(cut -d' ' -f1 /proc/uptime)
wait "$writer"
status=$?
t1=$(cut -d' ' -f1 /proc/uptime)
took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
case $status in
0) lab_fail "a write to $dev completed although its target went away ${took} s earlier: $(lab_tail "$LAB_RESULTS/dd-lost.txt")" ;;
124 | 137) lab_fail "a write to $dev hung after its target went away (killed after 120 s)" ;;
esac
awk -v t="$took" -v l="$loss_limit" 'BEGIN { exit !(t <= l) }' ||
	lab_fail "a write to $dev failed ${took} s after its target went away, not within the controller-loss timeout ($NVMEOF_CTRL_LOSS_TMO s) and ${loss_margin} s: $(lab_tail "$LAB_RESULTS/dd-lost.txt")"
lab_summary "NVMe/RDMA target removed under a write: dd failed (status $status) $took s later, within the controller-loss timeout ($NVMEOF_CTRL_LOSS_TMO s) and ${loss_margin} s ($(lab_tail "$LAB_RESULTS/dd-lost.txt"))"
timeout 60 nvme disconnect -n "$NVMEOF_NQN" >/dev/null 2>&1

# Tear down: target, then the consumers' modules (the driver's rmmod follows).
nvmeof_target_down
dmesg >"$LAB_RESULTS/nvme-dmesg.txt"
lab_dmesg_check "$LAB_RESULTS/nvme-dmesg.txt" "NVMe over RDMA"
