#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# PID 1 of a lab guest (see Documentation/lab.md).
#
# The guest's root is the host's root, shared read-only over virtio-9p, so this
# script runs under the host's /bin/sh and every tool is the host's. The runner
# (tools/pvrdma-lab) passes what to do on the kernel command line, under names
# that are not module parameters of any module that will ever be loaded:
#   lab.model=NAME        the device model (patched, patched-vN or stock QEMU; only recorded)
#   lab.device_version=N  the pvrdma device version the model presents (17 to 20)
#   lab.driver=c|rust     which driver this run is for (only recorded)
#   lab.module=PATH       the RDMA driver module to insmod
#   lab.kdir=PATH         the test kernel's build dir (modules.order: dependencies)
#   lab.tests=NAME:SECONDS,...
#                         runs tests/guest/tests/NAME.sh with that guest-side time
#                         limit, for each in turn (a guest the runner gives several
#                         tests: each with the driver loaded afresh and removed after)
#   lab.role=server|client, lab.ip=192.0.2.N, lab.peer=192.0.2.M, lab.incarnation=K
#                         a two-guest test: this guest's role, its address, the
#                         other guest's, and which start of this guest it is (a
#                         client started again after its QEMU ended: 2, ...); one
#                         guest alone: 192.0.2.1, no role
#   lab.shell=1           instead of tests (no lab.tests): the driver loaded and the port
#                         ACTIVE as for a test, then an interactive shell on the serial
#                         console (pvrdma-lab shell); its end ends the guest as a test's
#                         would; lab.tty=ROWSxCOLS and lab.term=TERM: the user's terminal
# and shares each test's results directory writable under the tags "results1",
# "results2", ... in the order of lab.tests (a shell guest: "results1").
#
# Whatever happens, this script writes what it saw into the results directories
# of the tests it started and powers the guest off; `done` is written last, so a
# missing `done` tells the runner the guest never finished reporting. A test that
# disturbs the kernel (taints it, turns lockdep off) or fails to set up or tear
# down ends the guest: the tests after it are not started (the runner gives them
# guests of their own).

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
LAB_DIR=${0%/*}
export LAB_DIR
R=/run/results/1
LAB_RESULTS=$R
export LAB_RESULTS
LAB_IP=192.0.2.1
LAB_PEER_IP=
LAB_ROLE=
LAB_INCARNATION=1
export LAB_IP LAB_PEER_IP LAB_ROLE LAB_INCARNATION

# --- Early mounts -----------------------------------------------------------
# init's own steps use the host's static busybox: under TCG, starting a dynamically
# linked tool costs 60-180 ms (the loader, its libraries over 9p), a busybox applet
# 25-40 ms, and a guest starts some hundred of them before and after its test.
busybox mount -t proc proc /proc
read -r LAB_BOOT_UPTIME _ </proc/uptime
busybox mount -t sysfs sysfs /sys
[ -c /dev/null ] || busybox mount -t devtmpfs devtmpfs /dev
busybox mkdir -p /dev/pts /dev/shm 2>/dev/null
busybox mount -t devpts devpts /dev/pts 2>/dev/null
busybox mount -t tmpfs -o mode=1777 tmpfs /dev/shm 2>/dev/null
# Everything the tools may write: the host's root is read-only. A fresh tmpfs
# over each of these would hide the host's files below it, and the checkout
# (this script, the tests, the Rust module) or the cache (the kernel's modules)
# may live there (a clone under /tmp, say): those host directories are bound
# aside first and moved back over the tmpfs after.
lab_writable="/tmp /run /var/tmp /var/lib/rdma"
lab_keep=/dev/shm/lab-keep
lab_kept=
lab_n=0
read -r lab_cmdline </proc/cmdline
# shellcheck disable=SC2086 # the command line is split into words on purpose
for lab_path in "$LAB_DIR" $(for arg in $lab_cmdline; do
	case "$arg" in lab.module=*/*) lab_module=${arg#lab.module=} && echo "${lab_module%/*}" ;; lab.kdir=*) echo "${arg#lab.kdir=}" ;; esac
done); do
	for d in $lab_writable; do
		case "$lab_path/" in
		"$d"/*)
			lab_n=$((lab_n + 1))
			busybox mkdir -p "$lab_keep/$lab_n"
			busybox mount -o bind "$lab_path" "$lab_keep/$lab_n" && lab_kept="$lab_kept $lab_n:$lab_path"
			;;
		esac
	done
done
for d in $lab_writable; do
	[ -d "$d" ] && busybox mount -t tmpfs -o mode=1777 tmpfs "$d"
done
for lab_entry in $lab_kept; do
	busybox mkdir -p "${lab_entry#*:}"
	busybox mount -o move "$lab_keep/${lab_entry%%:*}" "${lab_entry#*:}"
done
busybox mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
HOME=/tmp
export HOME

# One results share per test: results1 at /run/results/1, and so on.
lab_slots=1
for arg in $lab_cmdline; do
	case "$arg" in
	# shellcheck disable=SC2086 # split at the commas on purpose
	lab.tests=*) lab_slots=$(IFS=, && set -- ${arg#lab.tests=} && echo $#) ;;
	esac
done
case "$lab_slots" in
[1-8]) ;;
*) lab_slots=1 ;;
esac
lab_n=0
while [ "$lab_n" -lt "$lab_slots" ]; do
	lab_n=$((lab_n + 1))
	busybox mkdir -p "/run/results/$lab_n"
	if ! busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 "results$lab_n" "/run/results/$lab_n"; then
		echo "lab-init: cannot mount the results share results$lab_n" >/dev/console
		[ "$lab_n" -gt 1 ] || echo o >/proc/sysrq-trigger
	fi
done
R=/run/results/1
LAB_RESULTS=$R

# --- Reporting helpers --------------------------------------------------------
# uptime_now: seconds since boot.
uptime_now() {
	read -r u _ </proc/uptime
	echo "$u"
}

# log MESSAGE: to the console (captured by the runner) and to init.log.
log() {
	echo "lab-init: $*" >/dev/console
	echo "[$(uptime_now)] $*" >>"$R/init.log"
}

# stage NAME: the last step reached, read by the runner when the guest never reports.
stage() {
	echo "$1" >"$R/stage"
	log "stage: $1"
}

# wait_until_aged SINCE: sleeps until 6 s have passed since uptime SINCE (if
# given): kmemleak reports only objects older than 5 s (MSECS_MIN_AGE).
wait_until_aged() {
	[ -n "$1" ] || return 0
	lab_wait=$(busybox awk -v now="$(uptime_now)" -v since="$1" 'BEGIN { d = 6 - (now - since); printf "%.2f", (d > 0 ? d : 0) }')
	log "kmemleak: waiting ${lab_wait}s for the driver's last allocations to age"
	busybox sleep "$lab_wait"
}

# collect_dmesg FILE: appends to FILE the kernel messages since the last call
# (all of them at the first): each test of a guest gets its own. The mark is
# the last time stamp seen and how many lines had it (a message printed in the
# same microsecond after the last call is kept).
lab_dmesg_mark="-1 0"
collect_dmesg() {
	dmesg >/run/lab-dmesg 2>&1
	busybox awk -v mark="${lab_dmesg_mark% *}" -v marked="${lab_dmesg_mark#* }" -v markfile=/run/lab-dmesg-mark '
		/^\[ *[0-9]+\.[0-9]+\]/ {
			# (the stamp kept as text: awk would print a number with 6 digits)
			stamp = substr($0, 2, index($0, "]") - 2)
			t = stamp + 0
			if (t == mark + 0)
				seen++
			keep = (t > mark + 0 || (t == mark + 0 && seen > marked + 0))
			if (t == last + 0 && last != "")
				at_last++
			else
				at_last = 1
			last = stamp
		}
		keep { print }
		END { print (last == "" ? mark " " marked : (last + 0 == mark + 0 ? last " " seen : last " " at_last)) > markfile }
	' /run/lab-dmesg >>"$1"
	read -r lab_dmesg_mark </run/lab-dmesg-mark
}

# collect_test: the current test's report but for kmemleak's (the guest's last step).
collect_test() {
	stage collect
	# Judged by the runner: O (the out-of-tree module) and N (KUnit ran) are
	# expected, any other taint is trouble.
	busybox cat /proc/sys/kernel/tainted >"$R/tainted" 2>/dev/null
	collect_dmesg "$R/dmesg.txt"
	busybox cat /proc/modules >"$R/modules-after.txt" 2>&1
	uptime_now >"$R/end-uptime"
}

# finish: kmemleak's report for the tests started, `done`, power off. Never returns.
finish() {
	log "slots end: kmemleak"
	if [ ! -e /sys/kernel/debug/kmemleak ]; then
		lab_leak_state="absent (no /sys/kernel/debug/kmemleak)"
	elif echo scan >/sys/kernel/debug/kmemleak 2>/dev/null; then
		# kmemleak reports an object unreferenced and unchanged (same
		# checksum) in two scans and, at the second, older than 5 s: that
		# scan waits until the driver's last activity (rmmod) is 6 s old, so
		# that what the remove path leaks is reported too.
		log "kmemleak: scanned"
		wait_until_aged "$lab_driver_idle"
		log "kmemleak: scanning again"
		echo scan >/sys/kernel/debug/kmemleak
		busybox cat /sys/kernel/debug/kmemleak >/run/lab-kmemleak 2>&1
		lab_leak_state=scanned
	else
		# kmemleak switches itself off for good on an internal error.
		lab_leak_state="disabled (a scan was refused)"
	fi
	# What the kernel said since the last test's collection goes to that test;
	# in a shared guest, but for kmemleak's count of the leaks, which the runner
	# gives to the tests whose allocations they are (the jiffies-from of each).
	if [ "$lab_slots" -gt 1 ]; then
		: >/run/lab-dmesg-rest
		collect_dmesg /run/lab-dmesg-rest
		busybox grep -v "new suspected memory leak" /run/lab-dmesg-rest >>"$R/dmesg.txt"
	else
		collect_dmesg "$R/dmesg.txt"
	fi
	for lab_slot in $lab_started; do
		lab_dir=/run/results/$lab_slot
		echo "$lab_leak_state" >"$lab_dir/kmemleak-state"
		if [ -e /run/lab-kmemleak ]; then
			if [ "$lab_slots" -gt 1 ]; then
				busybox cp /run/lab-kmemleak "$lab_dir/kmemleak-batch.txt"
			else
				busybox cp /run/lab-kmemleak "$lab_dir/kmemleak.txt"
			fi
		fi
		echo "done" >"$lab_dir/done"
	done
	busybox sync
	for lab_slot in $lab_started; do
		busybox umount "/run/results/$lab_slot" 2>/dev/null
	done
	echo "lab-init: powering off" >/dev/console
	busybox poweroff -f 2>/dev/null
	echo o >/proc/sysrq-trigger
	sleep 10
	exit 1
}

# setup_failed MESSAGE: records why the guest could not run the test, then finishes.
setup_failed() {
	echo "$*" >"$R/setup"
	log "setup failed: $*"
	collect_test
	finish
}

# The tests started (their slots): the first from the start, for what fails before it.
lab_started=1
echo "$LAB_BOOT_UPTIME" >"$R/boot-uptime"
log "init started at uptime $LAB_BOOT_UPTIME s"
stage parse-cmdline

# --- What to do ----------------------------------------------------------------
LAB_MODEL=
LAB_DEVICE_VERSION=
LAB_DRIVER=
LAB_MODULE=
LAB_KDIR=
LAB_TESTS=
lab_shell=
lab_tty=
lab_term=
# shellcheck disable=SC2086 # the command line is split into words on purpose
for arg in $lab_cmdline; do
	case "$arg" in
	lab.shell=*) lab_shell=${arg#lab.shell=} ;;
	lab.tty=*) lab_tty=${arg#lab.tty=} ;;
	lab.term=*) lab_term=${arg#lab.term=} ;;
	lab.model=*) LAB_MODEL=${arg#lab.model=} ;;
	lab.device_version=*) LAB_DEVICE_VERSION=${arg#lab.device_version=} ;;
	lab.driver=*) LAB_DRIVER=${arg#lab.driver=} ;;
	lab.module=*) LAB_MODULE=${arg#lab.module=} ;;
	lab.kdir=*) LAB_KDIR=${arg#lab.kdir=} ;;
	lab.tests=*) LAB_TESTS=${arg#lab.tests=} ;;
	lab.role=*) LAB_ROLE=${arg#lab.role=} ;;
	lab.ip=*) LAB_IP=${arg#lab.ip=} ;;
	lab.peer=*) LAB_PEER_IP=${arg#lab.peer=} ;;
	lab.incarnation=*) LAB_INCARNATION=${arg#lab.incarnation=} ;;
	lab.env.*)
		# The run's settings for its tests (pvrdma-lab run --guest-env): LAB_ variables only,
		# never the run's own (which driver, model, module, device, address, and where the
		# tests, their results and the kernel tree are, which tests run), as the runner
		# checked them (cli.rs RUN_IDENTITY).
		lab_assignment=${arg#lab.env.}
		lab_name=${lab_assignment%%=*}
		case "$lab_name" in
		LAB_*[!A-Z0-9_]* | LAB_) setup_failed "bad variable '$lab_name' on the kernel command line" ;;
		LAB_DRIVER | LAB_MODEL | LAB_DEVICE_VERSION | LAB_MODULE* | LAB_DEV | LAB_IP | LAB_DIR | LAB_RESULTS | LAB_KDIR | LAB_TESTS) setup_failed "lab.env.$lab_name on the kernel command line: $lab_name is the run's own, not a setting" ;;
		LAB_*) export "$lab_name=${lab_assignment#*=}" && log "guest environment: $lab_assignment" ;;
		*) setup_failed "bad variable '$lab_name' on the kernel command line" ;;
		esac
		;;
	esac
done
# (LAB_KDIR: tests that load the kernel's own modules use modules.sh with it)
export LAB_MODEL LAB_DEVICE_VERSION LAB_DRIVER LAB_KDIR
log "model=$LAB_MODEL device_version=$LAB_DEVICE_VERSION driver=$LAB_DRIVER module=$LAB_MODULE tests=$LAB_TESTS"
# Each test NAME:SECONDS, as many as there are results shares.
lab_n=0
lab_list=$(echo "$LAB_TESTS" | busybox tr ',' ' ')
for lab_entry in $lab_list; do
	lab_n=$((lab_n + 1))
	case "${lab_entry%:*}" in
	"" | *[!A-Za-z0-9_-]*) setup_failed "bad test name '${lab_entry%:*}' on the kernel command line" ;;
	esac
	case "${lab_entry##*:}" in
	"" | *[!0-9]*) setup_failed "bad time limit in '$lab_entry' on the kernel command line" ;;
	esac
	[ -r "$LAB_DIR/tests/${lab_entry%:*}.sh" ] || setup_failed "no test script $LAB_DIR/tests/${lab_entry%:*}.sh"
done
case "$lab_shell" in
"") [ "$lab_n" -ge 1 ] && [ "$lab_n" -eq "$lab_slots" ] || setup_failed "bad lab.tests '$LAB_TESTS' ($lab_slots results shares)" ;;
1) [ "$lab_n" -eq 0 ] && [ "$lab_slots" -eq 1 ] || setup_failed "lab.shell=1 with lab.tests '$LAB_TESTS' ($lab_slots results shares)" ;;
*) setup_failed "bad lab.shell '$lab_shell'" ;;
esac
case "$lab_tty" in
"") ;;
*[!0-9x]* | *x*x* | [!1-9]* | *x | *x0*) setup_failed "bad lab.tty '$lab_tty' (ROWSxCOLS)" ;;
*x*) ;;
*) setup_failed "bad lab.tty '$lab_tty' (ROWSxCOLS)" ;;
esac
case "$lab_term" in
*[!A-Za-z0-9._+-]*) setup_failed "bad lab.term '$lab_term'" ;;
esac
case "$LAB_MODEL" in
*[!a-z0-9_-]*) setup_failed "bad lab.model '$LAB_MODEL'" ;;
esac
case "$LAB_DEVICE_VERSION" in
17 | 18 | 19 | 20) ;;
*) setup_failed "bad lab.device_version '$LAB_DEVICE_VERSION' (17 to 20)" ;;
esac
# The lab's addresses are 192.0.2.0/24's (documentation) only.
for lab_addr in "$LAB_IP" ${LAB_PEER_IP:+"$LAB_PEER_IP"}; do
	case "${lab_addr#192.0.2.}" in
	"$lab_addr" | "" | *[!0-9]* | ????*) setup_failed "bad lab address '$lab_addr' (192.0.2.N only)" ;;
	esac
done
case "$LAB_ROLE" in
"" | server | client) ;;
*) setup_failed "bad lab.role '$LAB_ROLE'" ;;
esac
case "$LAB_INCARNATION" in
[1-9]) ;;
*) setup_failed "bad lab.incarnation '$LAB_INCARNATION'" ;;
esac
[ -z "$LAB_ROLE" ] || [ -n "$LAB_PEER_IP" ] || setup_failed "lab.role=$LAB_ROLE without lab.peer"
log "role=${LAB_ROLE:-alone} ip=$LAB_IP peer=${LAB_PEER_IP:-none} incarnation=$LAB_INCARNATION"
[ -r "$LAB_MODULE" ] || setup_failed "no driver module at '$LAB_MODULE'"

# shellcheck source=lib.sh
. "$LAB_DIR/lib.sh"
# shellcheck source=modules.sh
. "$LAB_DIR/modules.sh"

# --- Network --------------------------------------------------------------------
stage network
busybox ip link set lo up || setup_failed "ip link set lo up failed"
LAB_NETDEV=
for n in /sys/class/net/*; do
	drv=$(busybox readlink "$n/device/driver" 2>/dev/null)
	if [ "${drv##*/}" = vmxnet3 ]; then
		LAB_NETDEV=${n##*/}
		break
	fi
done
[ -n "$LAB_NETDEV" ] || setup_failed "no vmxnet3 network interface (ls /sys/class/net: $(echo /sys/class/net/*))"
export LAB_NETDEV
busybox ip link set "$LAB_NETDEV" up || setup_failed "ip link set $LAB_NETDEV up failed"
busybox ip addr add "$LAB_IP/24" dev "$LAB_NETDEV" || setup_failed "ip addr add $LAB_IP/24 dev $LAB_NETDEV failed"
busybox ip addr show >"$R/interfaces.txt" 2>&1
log "network: $LAB_NETDEV has $LAB_IP/24"

# --- The RDMA core ----------------------------------------------------------------
stage load-driver
# The RDMA core's user-space interfaces, in case the kernel builds them as modules
# (nothing depends on them, so the driver's dependencies do not pull them in).
for m in ib_uverbs ib_umad rdma_ucm; do
	if lab_module_path "$m" >/dev/null; then
		lab_load_module "$(lab_module_path "$m")" || setup_failed "cannot load $m: ${LAB_INSMOD_ERROR:-see init.log}"
	fi
done

# lab_processes_left: whether a thread other than this init's, a kernel
# thread (kthreadd's child) or a zombie is still there. Threads, not
# processes: a thread group's leader can be a zombie while its other threads,
# which share its files, still run.
lab_processes_left() {
	for lab_proc in /proc/[0-9]*/task/[0-9]*; do
		case $lab_proc in /proc/1/task/1 | /proc/2/task/2) continue ;; esac
		lab_stat=
		read -r lab_stat 2>/dev/null <"$lab_proc/stat"
		# pid (comm) state ppid ...: comm may hold spaces and parentheses.
		lab_stat=${lab_stat##*") "}
		lab_state=${lab_stat%% *}
		lab_ppid=${lab_stat#* }
		lab_ppid=${lab_ppid%% *}
		[ -z "$lab_state" ] || [ "$lab_state" = Z ] || [ "$lab_ppid" = 2 ] || return 0
	done
	return 1
}

# remove_driver: kills what the test (or the shell) left running, rmmods the driver
# (60 s at most) and writes how that went into `teardown`.
remove_driver() {
	stage rmmod
	# Anything the test left behind would hold the device open and make rmmod wait.
	kill -KILL -1 2>/dev/null
	# Until all it killed have closed their files (5 s at most): a process is
	# a zombie only after it did.
	lab_n=100
	while [ "$lab_n" -gt 0 ] && lab_processes_left; do
		lab_n=$((lab_n - 1))
		busybox sleep 0.05
	done
	# rmmod runs in the background and is waited for 60 s: one stuck in the kernel
	# (uninterruptible) would hold timeout(1) for ever, and the guest would never
	# report what it waits for.
	rmmod "$LAB_MODULE_NAME" >>"$R/init.log" 2>&1 &
	lab_rmmod=$!
	lab_n=600
	while lab_alive "$lab_rmmod" && [ "$lab_n" -gt 0 ]; do
		lab_n=$((lab_n - 1))
		busybox sleep 0.1
	done
	if lab_alive "$lab_rmmod"; then
		lab_hang_report "rmmod $LAB_MODULE_NAME still running after 60 s"
		echo "rmmod $LAB_MODULE_NAME hung (60 s): $(grep -m 1 '^stuck: ' "$R/hang.txt")" >"$R/teardown"
	elif wait "$lab_rmmod"; then
		echo ok >"$R/teardown"
	else
		echo "rmmod $LAB_MODULE_NAME failed (status $?)" >"$R/teardown"
	fi
	lab_driver_idle=$(uptime_now)
	read -r lab_teardown <"$R/teardown"
	log "teardown: $lab_teardown"
}

# run_test: one test of lab.tests (LAB_TEST, LAB_TIMEOUT, reporting into R):
# insmod, the port ACTIVE, the script, kill what it left, rmmod, its report.
run_test() {
	uptime_now >"$R/slot-uptime"
	# kmemleak's leaks are the test's whose allocations were made from here on
	# (the runner splits a shared guest's report at these).
	busybox grep -m 1 '^jiffies:' /proc/timer_list 2>/dev/null | busybox awk '{ print $2 }' >"$R/jiffies-from"
	stage load-driver
	lab_load_module "$LAB_MODULE" || setup_failed "insmod $LAB_MODULE failed: ${LAB_INSMOD_ERROR:-see init.log}"
	LAB_MODULE_NAME=$(modinfo -F name "$LAB_MODULE" 2>/dev/null)
	[ -n "$LAB_MODULE_NAME" ] || LAB_MODULE_NAME=$(basename "$LAB_MODULE" .ko | tr - _)
	# For tests that unload and reload the driver (driver_cycles).
	export LAB_MODULE LAB_MODULE_NAME
	log "loaded $LAB_MODULE_NAME"

	stage wait-device
	lab_wait_device 60 || setup_failed "$LAB_WAIT_FAILURE"
	# The tests must run on the driver under test: one bound before it (built in, or
	# left loaded) would have them run on another driver under this one's name.
	lab_check_bound_driver "$LAB_MODULE_NAME" || setup_failed "$LAB_BIND_FAILURE"
	export LAB_DEV LAB_GID_INDEX
	log "device $LAB_DEV port 1 ACTIVE, GID of $LAB_IP at index $LAB_GID_INDEX (ready at uptime $(uptime_now) s)"
	ibv_devinfo -v >"$R/ibv_devinfo.txt" 2>&1
	echo ok >"$R/setup"

	# --- The test ---
	stage "test $LAB_TEST"
	busybox rm -rf /tmp/lab-test
	mkdir -p /tmp/lab-test
	cd /tmp/lab-test || setup_failed "cannot cd to /tmp/lab-test"
	t0=$(uptime_now)
	# The watchdog: 10 s before the limit, what a test that is still running waits
	# for (timeout(1) cannot kill a process stuck in the kernel).
	# Once reporting, it is not stopped by the test's end: it is waited for.
	(
		busybox sleep $((LAB_TIMEOUT > 20 ? LAB_TIMEOUT - 10 : LAB_TIMEOUT))
		trap '' TERM
		lab_hang_report "the test still running 10 s before its limit of ${LAB_TIMEOUT} s"
	) &
	lab_watchdog=$!
	timeout -k 5 "$LAB_TIMEOUT" sh "$LAB_DIR/tests/$LAB_TEST.sh" >"$R/test.log" 2>&1 </dev/null
	status=$?
	kill "$lab_watchdog" 2>/dev/null
	wait "$lab_watchdog" 2>/dev/null
	t1=$(uptime_now)
	cd /
	echo "$status" >"$R/status"
	echo "$t0 $t1" >"$R/test-uptime"
	if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
		echo "FAIL: the test script did not finish within ${LAB_TIMEOUT}s (guest-side timeout)" >>"$R/test.log"
	fi
	log "test $LAB_TEST exited with status $status"
	sed 's/^/lab-test: /' "$R/test.log" >/dev/console

	# --- Teardown: the driver's remove path is part of every test ---
	remove_driver
	collect_test
}

# kernel_undisturbed: whether the next test may run in this guest: no taint but
# the expected O (out-of-tree module) and N (KUnit), lockdep still on, and the
# last test's teardown done; if not, lab_disturbed says why.
kernel_undisturbed() {
	# (not `read`: the shell reads a byte at a time, and a sysctl file read from
	# an offset other than 0 is empty)
	lab_taint=$(busybox cat /proc/sys/kernel/tainted)
	if [ $((lab_taint & ~(1 << 12 | 1 << 18))) -ne 0 ]; then
		lab_disturbed="the kernel is tainted ($lab_taint)"
	elif [ -r /proc/lockdep_stats ] && ! busybox grep -q '^ *debug_locks: *1$' /proc/lockdep_stats; then
		lab_disturbed="lockdep is off ($(busybox grep debug_locks /proc/lockdep_stats))"
	elif [ "$lab_teardown" != ok ]; then
		lab_disturbed="its teardown: $lab_teardown"
	else
		return 0
	fi
	return 1
}

# run_shell: lab.shell=1 (pvrdma-lab shell): the driver loaded and port 1 ACTIVE as
# before a test, then an interactive shell on the serial console (bash if there is one)
# in a session of its own, so that it has job control and Ctrl-C; when it exits, the
# driver's removal and the guest's report as after a test. A driver that does not come
# up is said so, and the shell given all the same, to look at why.
run_shell() {
	uptime_now >"$R/slot-uptime"
	stage load-driver
	if lab_load_module "$LAB_MODULE"; then
		lab_up=ok
	else
		lab_up="insmod $LAB_MODULE failed: ${LAB_INSMOD_ERROR:-see init.log}"
	fi
	LAB_MODULE_NAME=$(modinfo -F name "$LAB_MODULE" 2>/dev/null)
	[ -n "$LAB_MODULE_NAME" ] || LAB_MODULE_NAME=$(basename "$LAB_MODULE" .ko | tr - _)
	export LAB_MODULE LAB_MODULE_NAME
	if [ "$lab_up" = ok ]; then
		stage wait-device
		if ! lab_wait_device 60; then
			lab_up=$LAB_WAIT_FAILURE
		elif ! lab_check_bound_driver "$LAB_MODULE_NAME"; then
			lab_up=$LAB_BIND_FAILURE
		fi
	fi
	export LAB_DEV LAB_GID_INDEX
	echo "$lab_up" >"$R/setup"
	stage shell
	if [ "$lab_up" = ok ]; then
		log "shell: $LAB_MODULE_NAME loaded, device $LAB_DEV port 1 ACTIVE, GID of $LAB_IP at index $LAB_GID_INDEX"
	else
		log "shell: the driver is not up: $lab_up"
	fi
	log "shell: exit or Ctrl-D ends the guest (rmmod, dmesg and kmemleak into $R, power off); a test: sh \$LAB_DIR/tests/NAME.sh"
	if [ -n "$lab_tty" ]; then
		busybox stty -F /dev/ttyS0 rows "${lab_tty%x*}" cols "${lab_tty#*x}" 2>/dev/null
	fi
	[ -z "$lab_term" ] || TERM=$lab_term
	export TERM
	lab_shell_command="sh -i"
	[ -x /bin/bash ] && lab_shell_command="/bin/bash --norc -i"
	cd /tmp || cd /
	# The session leader opens the console's tty, which becomes its controlling terminal.
	# shellcheck disable=SC2016,SC2086 # expanded by the inner sh; the command split on purpose
	PS1="[lab $LAB_MODEL/$LAB_DRIVER \w]# " busybox setsid sh -c 'exec "$@" <>/dev/ttyS0 >&0 2>&1' sh $lab_shell_command &
	wait $!
	cd / || true
	log "shell: exited"
	if busybox grep -q "^$LAB_MODULE_NAME " /proc/modules; then
		remove_driver
	else
		echo "ok (not loaded at the shell's end)" >"$R/teardown"
		lab_driver_idle=$(uptime_now)
	fi
	collect_test
}

if [ "$lab_shell" = 1 ]; then
	run_shell
	finish
fi

# --- The tests, one after the other ----------------------------------------------
lab_slot=0
for lab_entry in $lab_list; do
	lab_slot=$((lab_slot + 1))
	LAB_TEST=${lab_entry%:*}
	LAB_TIMEOUT=${lab_entry##*:}
	export LAB_TEST
	if [ "$lab_slot" -gt 1 ]; then
		kernel_undisturbed || {
			log "after the last test $lab_disturbed: the rest of lab.tests is not started"
			break
		}
		R=/run/results/$lab_slot
		LAB_RESULTS=$R
		lab_started="$lab_started $lab_slot"
		echo "$LAB_BOOT_UPTIME" >"$R/boot-uptime"
	fi
	# The runner splits the console at these lines.
	log "slot $lab_slot: $LAB_TEST begins"
	run_test
done
finish
