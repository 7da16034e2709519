#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: removal while processes hold the device, with traffic running (ibv_rc_pingpong -e, ibv_asyncwatch): a PCI unbind, then (after bind) rmmod. The Rust driver implements disassociate_ucontext: each removal completes within 30 s while the processes still run; the pingpongs get errors and exit by themselves, ibv_asyncwatch sees IBV_EVENT_DEVICE_FATAL (and exits when killed); the C driver has none: its unbind waits until the processes are killed and rmmod is refused while they run (both checked and noted). After each, the device comes back (bind, insmod) and carries a pingpong; dmesg free of oops/WARN
# lab-timeout: 600
# lab-runs-last: unbinds the PCI device from its driver under running processes and binds it again
. "$LAB_DIR/lib.sh"

name=unbind_in_use
limit=30
dev_path=$(readlink -f "/sys/class/infiniband/$LAB_DEV/device")
bdf=$(basename "$dev_path")
driver_dir=$(readlink -f "$dev_path/driver")
[ -d "$driver_dir" ] || lab_fail "$name: no driver directory for $bdf"
port=18660

# uptime_s: seconds since boot.
uptime_s() {
	cut -d. -f1 /proc/uptime
}

# start_users TAG: an ibv_rc_pingpong -e pair with many iterations (traffic for
# longer than the test) and an ibv_asyncwatch, all holding the device.
start_users() {
	tag=$1
	port=$((port + 1))
	set -- -d "$LAB_DEV" -g "$LAB_GID_INDEX" -s 64 -n 100000000 -p "$port" -e
	srv_log=$LAB_RESULTS/$name-$tag-server.log
	cli_log=$LAB_RESULTS/$name-$tag-client.log
	watch_log=$LAB_RESULTS/$name-$tag-asyncwatch.log
	stdbuf -oL ibv_asyncwatch -d "$LAB_DEV" >"$watch_log" 2>&1 &
	watch_pid=$!
	stdbuf -oL ibv_rc_pingpong "$@" >"$srv_log" 2>&1 &
	srv_pid=$!
	LAB_SERVER_PID=$srv_pid
	lab_wait_tcp_listen "$port" 60 || lab_fail "$name ($tag): the pingpong server did not listen: $(lab_tail "$srv_log")"
	stdbuf -oL ibv_rc_pingpong "$@" 127.0.0.1 >"$cli_log" 2>&1 &
	cli_pid=$!
	sleep 5
	for p in $watch_pid $srv_pid $cli_pid; do
		lab_alive "$p" || lab_fail "$name ($tag): a user exited before the removal: $(lab_tail "$srv_log") / $(lab_tail "$cli_log") / $(lab_tail "$watch_log")"
	done
}

# users_alive: true while a pingpong end runs. (ibv_asyncwatch is a watcher:
# after IBV_EVENT_DEVICE_FATAL it keeps reading the async event file, which
# the core leaves open; it is checked separately.)
users_alive() {
	lab_alive "$srv_pid" || lab_alive "$cli_pid"
}

# users_report: what each user still running is doing (its state, where it
# sleeps, its kernel stack), for a failure message; the stacks go to a file.
users_report() {
	for p in $watch_pid $srv_pid $cli_pid; do
		lab_alive "$p" || continue
		st=$(cut -d' ' -f2,3 "/proc/$p/stat" 2>/dev/null)
		printf '%s %s in %s; ' "$p" "$st" "$(cat "/proc/$p/wchan" 2>/dev/null)"
		{ echo "== $p $st"; cat "/proc/$p/stack" 2>&1; } >>"$LAB_RESULTS/$name-stacks.txt"
	done
}

# wait_users SECONDS: waits until every user exited; false if one still runs.
wait_users() {
	n=$(($1 * 5))
	while users_alive; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.2
	done
}

# stop_users: kills what still runs and reaps all three.
stop_users() {
	kill "$watch_pid" "$srv_pid" "$cli_pid" 2>/dev/null
	wait "$watch_pid" "$srv_pid" "$cli_pid" 2>/dev/null
}

# background_done PID SECONDS: waits up to SECONDS for PID to exit; false if it still runs.
background_done() {
	n=$(($2 * 5))
	while lab_alive "$1"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.2
	done
}

# check_disassociated TAG WHAT: the Rust driver's users after WHAT completed:
# the device is gone, the users exit by themselves, asyncwatch saw the fatal event.
check_disassociated() {
	[ ! -e "/sys/class/infiniband/$LAB_DEV" ] || lab_fail "$name: $2 completed but $LAB_DEV still exists"
	wait_users "$limit" || lab_fail "$name: users still run $limit s after $2: $(users_report)(server: $(lab_tail "$srv_log"); client: $(lab_tail "$cli_log"); asyncwatch: $(lab_tail "$watch_log"))"
	grep -q IBV_EVENT_DEVICE_FATAL "$watch_log" ||
		lab_fail "$name: ibv_asyncwatch did not see IBV_EVENT_DEVICE_FATAL after $2: $(lab_tail "$watch_log")"
	# The watcher still waits for events; it must go when told.
	kill "$watch_pid" 2>/dev/null
	background_done "$watch_pid" 10 || lab_fail "$name: ibv_asyncwatch did not exit within 10 s of SIGTERM after $2: $(users_report)"
	wait "$watch_pid" 2>/dev/null
	wait "$srv_pid"
	srv_status=$?
	wait "$cli_pid"
	cli_status=$?
	[ "$srv_status" -ne 0 ] && [ "$cli_status" -ne 0 ] ||
		lab_fail "$name: a pingpong end exited 0 after $2 (server $srv_status, client $cli_status)"
	lab_note "$name ($1): server exit $srv_status: $(lab_tail "$srv_log")"
	lab_note "$name ($1): client exit $cli_status: $(lab_tail "$cli_log")"
}

# check_back WHAT: the device is back and carries a short pingpong.
check_back() {
	lab_wait_device 60 || lab_fail "$name: after $1: $LAB_WAIT_FAILURE"
	port=$((port + 1))
	lab_pingpong ibv_rc_pingpong 64 20 "$port" --chk
}

# 1. PCI unbind while the users run.
start_users unbind
start=$(uptime_s)
( echo "$bdf" >"$driver_dir/unbind" ) 2>"$LAB_RESULTS/$name-unbind.err" &
unbind_pid=$!
if [ "$LAB_DRIVER" = c ]; then
	# No disassociate_ucontext: the unbind waits for every process to close the device.
	if background_done "$unbind_pid" 10; then
		lab_fail "$name: the C driver's unbind completed while processes held the device (it has no disassociate_ucontext: check what happened to them)"
	fi
	lab_note "$name: the C driver's unbind still waits 10 s later, while the processes hold the device"
	stop_users
	background_done "$unbind_pid" "$limit" || lab_fail "$name: the C driver's unbind did not complete within $limit s after the processes were killed"
	unbind_note="the C driver's unbind waited for the processes (killed after 10 s), then completed"
else
	background_done "$unbind_pid" "$limit" || lab_fail "$name: the unbind did not complete within $limit s while processes held the device"
	unbind_s=$(($(uptime_s) - start))
	check_disassociated unbind "the unbind"
	unbind_note="unbind completed in $unbind_s s with the processes running; they got IBV_EVENT_DEVICE_FATAL and exited (server $srv_status, client $cli_status)"
fi
wait "$unbind_pid" || lab_fail "$name: the unbind failed: $(cat "$LAB_RESULTS/$name-unbind.err")"
echo "$bdf" >"$driver_dir/bind" || lab_fail "$name: bind failed"
check_back "the unbind"

# 2. rmmod while the users run.
start_users rmmod
start=$(uptime_s)
rmmod_log=$LAB_RESULTS/$name-rmmod.log
timeout 60 rmmod "$LAB_MODULE_NAME" >"$rmmod_log" 2>&1 &
rmmod_pid=$!
if [ "$LAB_DRIVER" = c ]; then
	background_done "$rmmod_pid" "$limit" || lab_fail "$name: the C driver's rmmod neither completed nor failed within $limit s"
	wait "$rmmod_pid" && lab_fail "$name: the C driver's rmmod went through while processes held the device"
	grep -q "in use" "$rmmod_log" || lab_fail "$name: the C driver's rmmod failed, but not as in use: $(lab_tail "$rmmod_log")"
	stop_users
	rmmod_note="the C driver's rmmod is refused while processes hold the device ($(lab_tail "$rmmod_log"))"
else
	background_done "$rmmod_pid" "$limit" || lab_fail "$name: rmmod did not complete within $limit s while processes held the device"
	wait "$rmmod_pid" || lab_fail "$name: rmmod failed while processes held the device: $(lab_tail "$rmmod_log")"
	rmmod_s=$(($(uptime_s) - start))
	check_disassociated rmmod "rmmod"
	timeout 60 insmod "$LAB_MODULE" >"$rmmod_log" 2>&1 || lab_fail "$name: insmod after rmmod failed: $(lab_tail "$rmmod_log")"
	rmmod_note="rmmod completed in $rmmod_s s with the processes running; they exited (server $srv_status, client $cli_status)"
fi
check_back "the rmmod"
lab_summary "$name: $unbind_note; $rmmod_note; the device came back and carried a pingpong each time"
