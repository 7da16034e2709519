#!/bin/sh
# lab-about: NVMe over RDMA through the driver under test (issue 13): nvmet exports a 64 MiB RAM disk on an RDMA port at 192.0.2.1:4420, nvme connect -t rdma from the same guest; 8 MiB of random data written through the namespace, read back and found on the RAM disk (checksums), ext4 made on it and a file round trip, disconnect and reconnect (the file still there), then the target's port removed under a write: the write fails within the controller-loss timeout instead of hanging; dmesg free of kernel reports
# lab-timeout: 600
# lab-own-guest: loads nvmet-rdma and nvme-rdma, which stay loaded as RDMA clients of every device after
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
# controller-loss timeout (5 s, plus reconnect attempts), not hang.
timeout 120 dd if=/dev/zero of="$dev" bs=1M count=48 oflag=direct 2>"$LAB_RESULTS/dd-lost.txt" &
writer=$!
sleep 1
rm "$NVMEOF_PORT/subsystems/$NVMEOF_NQN" || lab_fail "cannot remove $NVMEOF_NQN from the port"
t0=$(cut -d' ' -f1 /proc/uptime)
wait "$writer"
status=$?
t1=$(cut -d' ' -f1 /proc/uptime)
[ "$status" -ne 124 ] || lab_fail "a write to $dev hung after its target went away (killed after 120 s)"
lab_summary "NVMe/RDMA target removed under a write: dd ended with status $status $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s later ($(lab_tail "$LAB_RESULTS/dd-lost.txt"))"
timeout 60 nvme disconnect -n "$NVMEOF_NQN" >/dev/null 2>&1

# Tear down: target, then the consumers' modules (the driver's rmmod follows).
nvmeof_target_down
dmesg >"$LAB_RESULTS/nvme-dmesg.txt"
lab_dmesg_check "$LAB_RESULTS/nvme-dmesg.txt" "NVMe over RDMA"
