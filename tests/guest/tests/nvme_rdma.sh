#!/bin/sh
# lab-about: NVMe over RDMA through the driver under test (issue 13): nvmet exports a 64 MiB RAM disk on an RDMA port at 192.0.2.1:4420, nvme connect -t rdma from the same guest; 8 MiB of random data written through the namespace, read back and found on the RAM disk (checksums), ext4 made on it and a file round trip, disconnect and reconnect (the file still there), then the target's port removed under a write: the write fails within the controller-loss timeout instead of hanging; dmesg free of kernel reports
# lab-timeout: 600
. "$LAB_DIR/lib.sh"

# The consumers are modules of the test kernel, loaded like the drivers
# (modules.sh: no /lib/modules for the test kernel in the guest).
R=$LAB_RESULTS
log() { lab_note "$*"; }
. "$LAB_DIR/modules.sh"
load() {
	path=$(lab_module_path "$1") || lab_fail "module $1 is not built in $LAB_KDIR (the kernel's config lacks it)"
	lab_load_module "$path" || lab_fail "insmod $1: $LAB_INSMOD_ERROR"
}
for m in brd nvmet nvmet-rdma nvme-rdma ext4; do
	load "$m"
done

sum() { sha256sum "$1" | cut -d' ' -f1; }
cfg=/sys/kernel/config
grep -q " $cfg configfs " /proc/mounts || mount -t configfs configfs "$cfg" || lab_fail "cannot mount configfs"
nqn=nqn.2026-11.lab.pvrdma:ram0
sub=$cfg/nvmet/subsystems/$nqn
port=$cfg/nvmet/ports/1
[ -b /dev/ram0 ] || lab_fail "no /dev/ram0 after loading brd"

# The target: the RAM disk as namespace 1 of a subsystem any host may use,
# on an RDMA port at this guest's address.
mkdir "$sub" && echo 1 >"$sub/attr_allow_any_host" &&
	mkdir "$sub/namespaces/1" && printf /dev/ram0 >"$sub/namespaces/1/device_path" &&
	echo 1 >"$sub/namespaces/1/enable" || lab_fail "nvmet: cannot set up subsystem $nqn"
mkdir "$port" && echo rdma >"$port/addr_trtype" && echo ipv4 >"$port/addr_adrfam" &&
	echo "$LAB_IP" >"$port/addr_traddr" && echo 4420 >"$port/addr_trsvcid" &&
	ln -s "$sub" "$port/subsystems/$nqn" || lab_fail "nvmet: cannot open an RDMA port on $LAB_IP:4420: $(dmesg | tail -n 2 | tr '\n' ' ')"

# connect: the host's controller over RDMA; sets dev to its namespace's
# block device. Losing the target fails I/O after 5 s (ctrl-loss-tmo)
# instead of 600.
connect() {
	out=$LAB_RESULTS/nvme-connect.txt
	timeout 60 nvme connect -t rdma -a "$LAB_IP" -s 4420 -n "$nqn" \
		--ctrl-loss-tmo=5 --reconnect-delay=1 >"$out" 2>&1
	lab_check_exit "nvme connect -t rdma -a $LAB_IP -s 4420" $? "$out" 60
	n=0
	while [ "$n" -lt 100 ]; do
		for c in /sys/class/nvme/nvme*; do
			[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$nqn" ] || continue
			[ "$(cat "$c/transport" 2>/dev/null)" = rdma ] || continue
			for b in "$c"/nvme*n1 /sys/block/"${c##*/}"n1; do
				[ -e "$b" ] || continue
				dev=/dev/${b##*/}
				[ -b "$dev" ] && return 0
			done
		done
		sleep 0.2
		n=$((n + 1))
	done
	lab_fail "nvme connect: no namespace of $nqn appeared: $(lab_tail "$out")"
}
disconnect() {
	out=$LAB_RESULTS/nvme-disconnect.txt
	timeout 60 nvme disconnect -n "$nqn" >"$out" 2>&1
	lab_check_exit "nvme disconnect -n $nqn" $? "$out" 60
	lab_expect "$out" "disconnected 1 controller" "nvme disconnect"
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
[ "$(sum /tmp/target)" = "$want" ] || lab_fail "the RAM disk behind $nqn does not hold what was written through $dev"
lab_summary "NVMe/RDMA raw: 8 MiB written and read back through $dev, the same on the target's RAM disk (sha256 $want)"

# A file system on it, a file, a reconnect, the file again.
mkdir -p /tmp/mnt
timeout 120 mkfs.ext4 -q -F "$dev" >"$LAB_RESULTS/mkfs.txt" 2>&1 || lab_fail "mkfs.ext4 $dev: $(lab_tail "$LAB_RESULTS/mkfs.txt")"
mount -t ext4 "$dev" /tmp/mnt || lab_fail "mount $dev"
cp /tmp/data /tmp/mnt/file && sync || lab_fail "writing a file on $dev"
umount /tmp/mnt || lab_fail "umount $dev"
disconnect
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
rm "$port/subsystems/$nqn" || lab_fail "cannot remove $nqn from the port"
t0=$(cut -d' ' -f1 /proc/uptime)
wait "$writer"
status=$?
t1=$(cut -d' ' -f1 /proc/uptime)
[ "$status" -ne 124 ] || lab_fail "a write to $dev hung after its target went away (killed after 120 s)"
lab_summary "NVMe/RDMA target removed under a write: dd ended with status $status $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s later ($(lab_tail "$LAB_RESULTS/dd-lost.txt"))"
timeout 60 nvme disconnect -n "$nqn" >/dev/null 2>&1

# Tear down: target, then the consumers' modules (the driver's rmmod follows).
echo 0 >"$sub/namespaces/1/enable"
rmdir "$port" "$sub/namespaces/1" "$sub" || lab_fail "cannot remove the nvmet port and subsystem"
for m in nvme_rdma nvmet_rdma; do
	timeout 60 rmmod "$m" 2>"$LAB_RESULTS/rmmod-$m.txt" || lab_fail "rmmod $m: $(lab_tail "$LAB_RESULTS/rmmod-$m.txt")"
done
dmesg >"$LAB_RESULTS/nvme-dmesg.txt"
lab_dmesg_check "$LAB_RESULTS/nvme-dmesg.txt" "NVMe over RDMA"
