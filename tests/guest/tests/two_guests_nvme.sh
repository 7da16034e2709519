#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: NVMe over RDMA between two guests: the server guest (192.0.2.1) exports a 64 MiB RAM disk with nvmet on an RDMA port, the client guest (192.0.2.2) connects with nvme connect -t rdma, writes 8 MiB of random data through the namespace and reads it back (the target's RDMA READs of the host's fast-registered buffers, its WRITEs into them and its SEND_WITH_INVs cross the mux between two device models); the server finds the same bytes on its RAM disk (the client's checksum handed over); disconnect, teardown on both sides, dmesg free of kernel reports
# lab-timeout: 400
# lab-guests: 2
. "$LAB_DIR/lib.sh"

[ -n "$LAB_ROLE" ] || lab_fail "a two-guest test run on one guest (no lab.role)"
R=$LAB_RESULTS
log() { lab_note "$*"; }
. "$LAB_DIR/modules.sh"
. "$LAB_DIR/nvmeof.sh"
sum() { sha256sum "$1" | cut -d' ' -f1; }

# The guests' handshake: the server says its target is up (ready port 9100,
# lab_ready_signal); once done and disconnected, the client offers the
# checksum of what it wrote on port 9101, which the server polls.
if [ "$LAB_ROLE" = server ]; then
	nvmeof_target_up
	lab_ready_signal 9100 300
	n=0
	said=
	while [ "$n" -lt 600 ]; do
		said=$(timeout 2 busybox nc "$LAB_PEER_IP" 9101 </dev/null 2>/dev/null)
		case "$said" in written\ *) break ;; esac
		sleep 0.5
		n=$((n + 1))
	done
	want=${said#written }
	[ -n "$said" ] && [ "$want" != "$said" ] || lab_fail "the client guest reported no checksum within 300 s"
	dd if=/dev/ram0 of=/tmp/target bs=1M count=8 2>/dev/null || lab_fail "cannot read /dev/ram0"
	[ "$(sum /tmp/target)" = "$want" ] ||
		lab_fail "the RAM disk does not hold the 8 MiB the client guest wrote over NVMe/RDMA"
	lab_summary "NVMe/RDMA target for $LAB_PEER_IP: the 8 MiB the client wrote are on the RAM disk (sha256 $want)"
	nvmeof_target_down
else
	nvmeof_load nvme-rdma
	lab_ready_wait 9100 120 "nvmet on $LAB_PEER_IP"
	nvmeof_connect "$LAB_PEER_IP"
	dev=$NVMEOF_DEV
	lab_note "connected to $LAB_PEER_IP: $dev"
	dd if=/dev/urandom of=/tmp/data bs=1M count=8 2>/dev/null || lab_fail "no random data"
	want=$(sum /tmp/data)
	timeout 120 dd if=/tmp/data of="$dev" bs=1M oflag=direct 2>"$R/dd-write.txt" ||
		lab_fail "writing 8 MiB to $dev failed: $(lab_tail "$R/dd-write.txt")"
	timeout 120 dd if="$dev" of=/tmp/back bs=1M count=8 iflag=direct 2>"$R/dd-read.txt" ||
		lab_fail "reading 8 MiB from $dev failed: $(lab_tail "$R/dd-read.txt")"
	[ "$(sum /tmp/back)" = "$want" ] || lab_fail "8 MiB read back through $dev differ from what was written"
	lab_summary "NVMe/RDMA host of $LAB_PEER_IP's target: 8 MiB written and read back through $dev (sha256 $want)"
	nvmeof_disconnect
	echo "written $want" | timeout 120 busybox nc -l -p 9101 >/dev/null 2>&1 ||
		lab_fail "the server guest did not collect the checksum within 120 s"
	timeout 60 rmmod nvme_rdma 2>"$R/rmmod-nvme_rdma.txt" || lab_fail "rmmod nvme_rdma: $(lab_tail "$R/rmmod-nvme_rdma.txt")"
fi
dmesg >"$R/nvme-dmesg.txt"
lab_dmesg_check "$R/nvme-dmesg.txt" "NVMe over RDMA ($LAB_ROLE)"
