#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: fio over NVMe/RDMA through the driver under test: nvmet exports a 64 MiB RAM disk on an RDMA port, nvme connect -t rdma from the same guest, then fio (libaio, O_DIRECT) on the namespace: sequential 128 KiB writes at depth 16 over the whole disk and random 4 KiB writes at depth 32 (8 MiB), each block checksummed (crc32c) and read back verified; sequential 128 KiB reads at depth 16 verifying the whole disk; random 4 KiB reads at depth 32 for 10 s; every job free of errors; throughput noted (make bench compares the drivers on it); dmesg free of kernel reports
# lab-timeout: 600
# lab-runs-last: loads nvmet-rdma and nvme-rdma, which stay loaded as RDMA clients of every device after
. "$LAB_DIR/lib.sh"

R=$LAB_RESULTS
log() { lab_note "$*"; }
. "$LAB_DIR/modules.sh"
. "$LAB_DIR/nvmeof.sh"
command -v fio >/dev/null || lab_fail "fio is not installed (tools/lab/apt-packages.txt)"
nvmeof_target_up
nvmeof_connect
dev=$NVMEOF_DEV
lab_note "connected: $dev"

# fio_job NAME FIELD ARGS...: one fio job on the namespace (libaio, O_DIRECT),
# which must end without an error (a verify mismatch is one); notes its
# throughput from FIELD of fio's terse output (7: read, 48: write KiB/s;
# 8/49 IOPS) as "fio NAME: X MB/s, N IOPS" (tools/pvrdma-lab's bench reads it).
fio_job() {
	name=$1
	field=$2
	shift 2
	out=$R/fio-$(echo "$name" | tr ' ' '-').txt
	timeout 300 fio --name=lab --filename="$dev" --ioengine=libaio --direct=1 \
		--output-format=terse --terse-version=3 "$@" >"$out" 2>&1
	lab_check_exit "fio $name" $? "$out" 300
	line=$(grep '^3;fio-' "$out" | tail -n 1)
	[ -n "$line" ] || lab_fail "fio $name printed no result: $(lab_tail "$out")"
	error=$(echo "$line" | cut -d';' -f5)
	[ "$error" = 0 ] || lab_fail "fio $name ended with error $error: $(lab_tail "$out")"
	kib=$(echo "$line" | cut -d';' -f"$field")
	iops=$(echo "$line" | cut -d';' -f"$((field + 1))")
	[ "${kib:-0}" -gt 0 ] 2>/dev/null || lab_fail "fio $name measured no throughput: $(echo "$line" | cut -c 1-200)"
	lab_summary "fio $name: $(awk -v k="$kib" 'BEGIN { printf "%.2f", k * 1024 / 1e6 }') MB/s, $iops IOPS"
}

# Writes carry a crc32c header in every block and are read back and checked
# at the end of their job (fio's verify); the sequential read checks the
# whole disk again.
fio_job "seq write 128k qd16" 48 --rw=write --bs=128k --iodepth=16 --size=64M --verify=crc32c
fio_job "seq read 128k qd16" 7 --rw=read --bs=128k --iodepth=16 --size=64M --verify=crc32c
fio_job "rand write 4k qd32" 48 --rw=randwrite --bs=4k --iodepth=32 --size=64M --io_size=8M \
	--verify=crc32c --randrepeat=1
fio_job "rand read 4k qd32" 7 --rw=randread --bs=4k --iodepth=32 --size=64M --time_based --runtime=10

nvmeof_disconnect
nvmeof_target_down
dmesg >"$R/nvme-dmesg.txt"
lab_dmesg_check "$R/nvme-dmesg.txt" "fio over NVMe/RDMA"
