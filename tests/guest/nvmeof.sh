# SPDX-License-Identifier: GPL-2.0
# NVMe over RDMA in one guest, sourced by the tests that use it (nvme_rdma,
# nvme_fio): nvmet exports a RAM disk on an RDMA port at this guest's
# address and the host side connects to it through the driver under test.
# Needs lib.sh and modules.sh (with R and log() set) sourced first.
# Sets: NVMEOF_NQN, NVMEOF_SUB, NVMEOF_PORT, and NVMEOF_DEV (the namespace's
# block device) once connected.

NVMEOF_NQN=nqn.2026-11.lab.pvrdma:ram0
nvmeof_cfg=/sys/kernel/config
NVMEOF_SUB=$nvmeof_cfg/nvmet/subsystems/$NVMEOF_NQN
NVMEOF_PORT=$nvmeof_cfg/nvmet/ports/1
# The host's controller-loss timeout (s) and its delay between reconnects.
NVMEOF_CTRL_LOSS_TMO=5
NVMEOF_RECONNECT_DELAY=1

# nvmeof_load MODULE...: loads the consumers (modules of the test kernel,
# loaded like the drivers: no /lib/modules for it in the guest).
nvmeof_load() {
	for m in "$@"; do
		path=$(lab_module_path "$m") || lab_fail "module $m is not built in $LAB_KDIR (the kernel's config lacks it)"
		lab_load_module "$path" || lab_fail "insmod $m: $LAB_INSMOD_ERROR"
	done
}

# nvmeof_target_up: the RAM disk (/dev/ram0, brd) as namespace 1 of a
# subsystem any host may use, on an RDMA port at $LAB_IP:4420.
nvmeof_target_up() {
	nvmeof_load brd nvmet nvmet-rdma nvme-rdma
	grep -q " $nvmeof_cfg configfs " /proc/mounts || mount -t configfs configfs "$nvmeof_cfg" ||
		lab_fail "cannot mount configfs"
	[ -b /dev/ram0 ] || lab_fail "no /dev/ram0 after loading brd"
	mkdir "$NVMEOF_SUB" && echo 1 >"$NVMEOF_SUB/attr_allow_any_host" &&
		mkdir "$NVMEOF_SUB/namespaces/1" && printf /dev/ram0 >"$NVMEOF_SUB/namespaces/1/device_path" &&
		echo 1 >"$NVMEOF_SUB/namespaces/1/enable" || lab_fail "nvmet: cannot set up subsystem $NVMEOF_NQN"
	mkdir "$NVMEOF_PORT" && echo rdma >"$NVMEOF_PORT/addr_trtype" && echo ipv4 >"$NVMEOF_PORT/addr_adrfam" &&
		echo "$LAB_IP" >"$NVMEOF_PORT/addr_traddr" && echo 4420 >"$NVMEOF_PORT/addr_trsvcid" &&
		ln -s "$NVMEOF_SUB" "$NVMEOF_PORT/subsystems/$NVMEOF_NQN" ||
		lab_fail "nvmet: cannot open an RDMA port on $LAB_IP:4420: $(dmesg | tail -n 2 | tr '\n' ' ')"
}

# nvmeof_connect [ADDRESS]: the host's controller over RDMA, to the target
# at ADDRESS (default: this guest's, LAB_IP); sets NVMEOF_DEV to its
# namespace's block device. Losing the target fails I/O after
# NVMEOF_CTRL_LOSS_TMO (5 s) instead of 600.
nvmeof_connect() {
	target=${1:-$LAB_IP}
	out=$R/nvme-connect.txt
	timeout 60 nvme connect -t rdma -a "$target" -s 4420 -n "$NVMEOF_NQN" \
		--ctrl-loss-tmo="$NVMEOF_CTRL_LOSS_TMO" --reconnect-delay="$NVMEOF_RECONNECT_DELAY" >"$out" 2>&1
	lab_check_exit "nvme connect -t rdma -a $target -s 4420" $? "$out" 60
	n=0
	while [ "$n" -lt 100 ]; do
		for c in /sys/class/nvme/nvme*; do
			[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NVMEOF_NQN" ] || continue
			[ "$(cat "$c/transport" 2>/dev/null)" = rdma ] || continue
			for b in "$c"/nvme*n1 /sys/block/"${c##*/}"n1; do
				[ -e "$b" ] || continue
				NVMEOF_DEV=/dev/${b##*/}
				[ -b "$NVMEOF_DEV" ] && return 0
			done
		done
		sleep 0.2
		n=$((n + 1))
	done
	lab_fail "nvme connect: no namespace of $NVMEOF_NQN appeared: $(lab_tail "$out")"
}

# nvmeof_disconnect: the host's controller disconnected, checked.
nvmeof_disconnect() {
	out=$R/nvme-disconnect.txt
	timeout 60 nvme disconnect -n "$NVMEOF_NQN" >"$out" 2>&1
	lab_check_exit "nvme disconnect -n $NVMEOF_NQN" $? "$out" 60
	lab_expect "$out" "disconnected 1 controller" "nvme disconnect"
	# The old controller keeps its NVMe subsystem listed until its release
	# runs, which the debug kernel delays by up to 4 s: a controller connected
	# meanwhile joins that subsystem. Where the old controller's release ran
	# after the new one had joined, the new one's namespace never appeared
	# (C driver, 2026-11-28, no kernel message; where it ran before, the
	# namespace came). A reconnect starts after the releases, as on a kernel
	# that runs them at once.
	lab_wait_kobject_releases
}

# nvmeof_target_down: the port and subsystem removed, then the consumers'
# RDMA modules unloaded (the driver's rmmod follows).
nvmeof_target_down() {
	echo 0 >"$NVMEOF_SUB/namespaces/1/enable"
	if [ -L "$NVMEOF_PORT/subsystems/$NVMEOF_NQN" ]; then
		rm "$NVMEOF_PORT/subsystems/$NVMEOF_NQN" || lab_fail "cannot remove $NVMEOF_NQN from the port"
	fi
	rmdir "$NVMEOF_PORT" "$NVMEOF_SUB/namespaces/1" "$NVMEOF_SUB" || lab_fail "cannot remove the nvmet port and subsystem"
	# The controllers' releases call into these modules (the debug kernel delays them).
	lab_wait_kobject_releases
	for m in nvme_rdma nvmet_rdma; do
		timeout 60 rmmod "$m" 2>"$R/rmmod-$m.txt" || lab_fail "rmmod $m: $(lab_tail "$R/rmmod-$m.txt")"
	done
}
