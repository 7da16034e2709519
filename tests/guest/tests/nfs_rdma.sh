#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: NFS over RDMA through the driver under test: nfsd with an RDMA listener (port 20049; TCP on loopback only) exports a tmpfs, mounted with -o proto=rdma,port=20049 (NFSv4.1) from the same guest (with the Rust driver on the patched model, the device notifying the client's first CQ at its arm, while the RDMA core is still setting it up, CPU 1 offline so that its interrupt reaches the arming CPU: dropped and counted); 8 MiB of random data written with O_DIRECT, read back and found in the export (checksums), a tree of files copied and compared, then nfsd stopped under a write and started again: the client reconnects over RDMA, reclaims its state and the write completes with the right data; umount, the consumers unloaded; dmesg free of kernel reports
# lab-timeout: 600
# lab-runs-last: loads the kernel's NFS server and client over RDMA, which stay loaded as RDMA clients of every device after
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
# rpcrdma is both ends' RDMA transport (xprtrdma and svcrdma); nothing
# would load it on demand here.
for m in rpcrdma nfsd nfsv4; do
	load "$m"
done
for tool in rpc.nfsd rpc.mountd exportfs nfsdcld mount.nfs4; do
	command -v "$tool" >/dev/null ||
		lab_fail "$tool is not installed (nfs-kernel-server, nfs-common: tools/lab/apt-packages.txt)"
done

sum() { sha256sum "$1" | cut -d' ' -f1; }
# seconds since boot, for durations
now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# nfs-utils' state lives in /var/lib/nfs, read-only here (the host's root):
# a tmpfs of its own, as on a diskless server.
mount -t tmpfs -o mode=755 tmpfs /var/lib/nfs &&
	mkdir /var/lib/nfs/nfsdcld && : >/var/lib/nfs/etab && : >/var/lib/nfs/rmtab ||
	lab_fail "cannot make /var/lib/nfs writable"
pipefs=/run/rpc_pipefs
mkdir -p "$pipefs" && mount -t rpc_pipefs rpc_pipefs "$pipefs" || lab_fail "cannot mount rpc_pipefs on $pipefs"
grep -q " /proc/fs/nfsd nfsd " /proc/mounts || mount -t nfsd nfsd /proc/fs/nfsd || lab_fail "cannot mount the nfsd file system"

# The export: a tmpfs of its own, the NFSv4 root (fsid=0).
export=/tmp/export
mkdir -p "$export" && mount -t tmpfs -o size=64m tmpfs "$export" || lab_fail "cannot mount a tmpfs on $export"
timeout 30 exportfs -o rw,sync,no_root_squash,no_subtree_check,insecure,fsid=0 "$LAB_IP/24:$export" \
	>"$R/exportfs.txt" 2>&1 || lab_fail "exportfs $LAB_IP/24:$export: $(lab_tail "$R/exportfs.txt")"

# The daemons: nfsdcld keeps the clients' records across an nfsd restart (the
# restart below reclaims state through it), rpc.mountd answers nfsd's export
# lookups. NFSv4 only: no rpcbind, statd or lockd.
nfsdcld -F -p "$pipefs" -s /var/lib/nfs/nfsdcld >"$R/nfsdcld.txt" 2>&1 &
cld=$!
rpc.mountd -F -N 2 -N 3 >"$R/mountd.txt" 2>&1 &
mountd=$!
# start_nfsd: 4 threads, NFSv4 only, listening for RDMA on 20049 (and, as
# rpc.nfsd insists for NFSv4, on TCP, here on the loopback address only: the
# lab's address reaches nfsd over RDMA alone). Lease and grace times at their
# minimum (10 s) keep the restart's grace period short.
start_nfsd() {
	timeout 60 rpc.nfsd -N 3 -H 127.0.0.1 --rdma=20049 -L 10 -G 10 4 >"$R/nfsd-$1.txt" 2>&1
	lab_check_exit "rpc.nfsd --rdma=20049 ($1)" $? "$R/nfsd-$1.txt" 60
	grep -qx "rdma 20049" /proc/fs/nfsd/portlist ||
		lab_fail "nfsd does not listen on RDMA port 20049: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
	[ "$(cat /proc/fs/nfsd/threads)" = 4 ] || lab_fail "nfsd runs $(cat /proc/fs/nfsd/threads) threads, not 4"
}
stop_nfsd() {
	timeout 60 rpc.nfsd 0 >"$R/nfsd-stop-$1.txt" 2>&1
	lab_check_exit "rpc.nfsd 0 ($1)" $? "$R/nfsd-stop-$1.txt" 60
}
start_nfsd start
lab_note "nfsd: $(cat /proc/fs/nfsd/versions), listening on $(cat /proc/fs/nfsd/portlist)"

# The Rust driver, on the patched model: a device that notifies the client's
# first CQ (xprtrdma's send CQ, from ib_alloc_cq(), which sets the CQ's
# workqueue only after it armed the CQ) at that arm, with nothing in it (QEMU
# patch 24's fault `cq-arm-notify`). Handing that to the CQ's handler queues
# work on a NULL workqueue (the C driver does: an oops, so it is not run on
# it); the driver must drop it and count it as a stale event.
#
# The mount runs with CPU 1 offline, so that the notification's interrupt goes
# to the CPU that arms: taken when the arm enables interrupts again, before
# ib_alloc_cq() goes on. With two CPUs the interrupt was seen to be taken by
# the other one only after the arming one had set the CQ up (and armed the
# next): a notification of a CQ ready for it, which tests nothing (a CI run,
# and 7 of 10 mounts of builds that logged arms and notifications; where the
# CPUs were logged, the arm ran on CPU 0 and the interrupt went to CPU 1).
arm_notify=
cpu1_online=/sys/devices/system/cpu/cpu1/online
if [ "$LAB_DRIVER" = rust ] && [ "$LAB_MODEL" != stock ]; then
	lab_build_test pvrdma_fault
	stale_file=/sys/class/infiniband/$LAB_DEV/ports/1/hw_counters/stale_events
	stale_before=$(cat "$stale_file") || lab_fail "cannot read $stale_file"
	echo 0 >"$cpu1_online" || lab_fail "cannot take CPU 1 offline for the mount"
	/tmp/pvrdma_fault cq-arm-notify >"$R/fault.txt" 2>&1 ||
		lab_fail "cannot arm the fault cq-arm-notify: $(lab_tail "$R/fault.txt")"
	arm_notify=1
fi

mnt=/tmp/mnt
mkdir -p "$mnt"
t0=$(now)
timeout 120 mount -t nfs4 -o vers=4.1,proto=rdma,port=20049,hard,timeo=50 "$LAB_IP:/" "$mnt" \
	>"$R/mount.txt" 2>&1
lab_check_exit "mount -t nfs4 -o proto=rdma,port=20049 $LAB_IP:/" $? "$R/mount.txt" 120
# The mount must really be on RDMA: the client's transport as it reports it.
# (/proc/self/mountstats: the options the client uses and its transport's
# statistics, the RPC transport named first.)
stats=$(sed -n "\|mounted on $mnt with fstype nfs4|,/^device /p" /proc/self/mountstats)
echo "$stats" >"$R/mountstats.txt"
echo "$stats" | grep -q "opts:.*proto=rdma,port=20049" ||
	lab_fail "the mount does not use proto=rdma,port=20049: $(echo "$stats" | grep opts: | cut -c 1-200)"
echo "$stats" | grep -q "xprt:[[:space:]]*rdma " ||
	lab_fail "the mount's RPC transport is not RDMA: $(echo "$stats" | grep xprt: | head -n 1)"
lab_note "mounted $LAB_IP:/ on $mnt over RDMA in $(since "$t0") s"
if [ -n "$arm_notify" ]; then
	/tmp/pvrdma_fault --wait 10 >>"$R/fault.txt" 2>&1 ||
		lab_fail "the fault cq-arm-notify did not happen during the mount: $(lab_tail "$R/fault.txt")"
	stale_after=$(cat "$stale_file")
	[ "$stale_after" -gt "$stale_before" ] ||
		lab_fail "a notification of a CQ still being set up was not dropped as a stale event (stale_events $stale_before, then $stale_after)"
	lab_note "cq-arm-notify: the notification at the arm of the client's first CQ dropped (stale_events $stale_before -> $stale_after)"
	echo 1 >"$cpu1_online" || lab_fail "cannot bring CPU 1 back online"
fi

# Raw data with O_DIRECT (every byte goes over the wire), read back the same
# way, and found in the export itself.
dd if=/dev/urandom of=/tmp/data bs=1M count=8 2>/dev/null || lab_fail "no random data"
want=$(sum /tmp/data)
timeout 120 dd if=/tmp/data of="$mnt/data" bs=1M oflag=direct 2>"$R/dd-write.txt" ||
	lab_fail "writing 8 MiB to $mnt/data failed: $(lab_tail "$R/dd-write.txt")"
timeout 120 dd if="$mnt/data" of=/tmp/back bs=1M iflag=direct 2>"$R/dd-read.txt" ||
	lab_fail "reading 8 MiB from $mnt/data failed: $(lab_tail "$R/dd-read.txt")"
[ "$(sum /tmp/back)" = "$want" ] || lab_fail "8 MiB read back over NFS/RDMA differ from what was written"
[ "$(sum "$export/data")" = "$want" ] || lab_fail "the export does not hold what was written over NFS/RDMA"
lab_summary "NFS/RDMA raw: 8 MiB written and read back with O_DIRECT, the same in the export (sha256 $want)"

# A tree of files through the page cache: a snapshot of the tests' own
# directory (taken first: the host may change it meanwhile) copied in
# (metadata, small writes), the caches dropped, and compared from both sides.
src=/tmp/tree
cp -r "$LAB_DIR" "$src" || lab_fail "cannot copy $LAB_DIR to $src"
timeout 120 cp -r "$src" "$mnt/tree" 2>"$R/cp.txt" || lab_fail "cp -r to $mnt: $(lab_tail "$R/cp.txt")"
sync
echo 3 >/proc/sys/vm/drop_caches
files=$(cd "$src" && find . -type f | wc -l)
(cd "$src" && find . -type f -exec sha256sum {} + | sort -k 2) >"$R/tree-source.txt"
(cd "$mnt/tree" && timeout 120 find . -type f -exec sha256sum {} + | sort -k 2) >"$R/tree-nfs.txt"
(cd "$export/tree" && find . -type f -exec sha256sum {} + | sort -k 2) >"$R/tree-export.txt"
cmp -s "$R/tree-source.txt" "$R/tree-nfs.txt" ||
	lab_fail "the tree read back over NFS/RDMA differs from its source: $(diff "$R/tree-source.txt" "$R/tree-nfs.txt" | grep '^[<>]' | head -n 2 | tr '\n' ' ')"
cmp -s "$R/tree-source.txt" "$R/tree-export.txt" ||
	lab_fail "the tree in the export differs from its source: $(diff "$R/tree-source.txt" "$R/tree-export.txt" | grep '^[<>]' | head -n 2 | tr '\n' ' ')"
lab_summary "NFS/RDMA files: a tree of $files files copied in, read back after dropping the caches and found in the export (sha256 each)"

# nfsd stopped under a write and started again: the hard mount retries, the
# client reconnects over RDMA when the listener is back, reclaims its open
# through the grace period (nfsdcld remembers it) and the write completes.
# 4 KiB at a time, each an RPC, so that the write is still going when nfsd stops.
timeout 180 dd if=/tmp/data of="$mnt/restart" bs=4k oflag=direct 2>"$R/dd-restart.txt" &
writer=$!
sleep 1
t0=$(now)
stop_nfsd restart
kill -0 "$writer" 2>/dev/null ||
	lab_fail "the write had ended before nfsd stopped: no restart under a write was tried ($(lab_tail "$R/dd-restart.txt"))"
lab_note "nfsd stopped under a write"
sleep 3
start_nfsd restart
wait "$writer"
status=$?
[ "$status" -ne 124 ] || lab_fail "a write hung across an nfsd restart (killed after 180 s)"
[ "$status" -eq 0 ] || lab_fail "a write across an nfsd restart failed (status $status): $(lab_tail "$R/dd-restart.txt")"
[ "$(sum "$export/restart")" = "$want" ] || lab_fail "the file written across an nfsd restart is not what was written"
lab_summary "NFS/RDMA server restart under a write: nfsd stopped 3 s, the client reconnected and the write of 8 MiB completed $(since "$t0") s after the stop, the file intact (sha256)"

# Tear down: client, server, daemons, then the consumers' modules (the
# driver's rmmod follows).
timeout 60 umount "$mnt" 2>"$R/umount.txt" || lab_fail "umount $mnt: $(lab_tail "$R/umount.txt")"
stop_nfsd end
timeout 30 exportfs -ua >/dev/null 2>&1
kill "$mountd" "$cld" 2>/dev/null
wait "$mountd" "$cld" 2>/dev/null
umount /proc/fs/nfsd "$pipefs" "$export" /var/lib/nfs 2>"$R/umount-server.txt" ||
	lab_fail "cannot unmount the server's file systems: $(lab_tail "$R/umount-server.txt")"
# On a kernel that delays kobject releases (the debug kernel) the NFS client's
# modules stay loaded: nfs's exit unregisters its kset, whose release function
# is the module's own, and the release, delayed, then runs after the module is
# gone (an oops in kobject_delayed_cleanup, seen; fs/nfs/sysfs.c, the kernel's).
unload="nfsv4 nfs nfsd rpcrdma"
if lab_kobject_releases_delayed; then
	unload="nfsd rpcrdma"
	lab_note "nfsv4 and nfs stay loaded: this kernel delays kobject releases, and nfs's kset would be released after the module is gone"
fi
for m in $unload; do
	timeout 60 rmmod "$m" 2>"$R/rmmod-$m.txt" || lab_fail "rmmod $m: $(lab_tail "$R/rmmod-$m.txt")"
done
dmesg >"$R/nfs-dmesg.txt"
lab_dmesg_check "$R/nfs-dmesg.txt" "NFS over RDMA"
