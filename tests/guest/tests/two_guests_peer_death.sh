#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: a peer that dies and comes back: the client guest (B, 192.0.2.2) receives ib_send_bw from the server guest (A, 192.0.2.1) until the runner SIGKILLs B's QEMU mid-transfer; A's sender must fail with an error completion (retry exceeded or flush) and exit, not hang, with a clean kernel; then B boots again, re-registers its GID while A is still up, and ibv_rc_pingpong --chk between A and the new B passes
# lab-timeout: 300
# lab-guests: 2
# lab-client-restarts: 1
. "$LAB_DIR/lib.sh"

[ -n "$LAB_ROLE" ] || lab_fail "a two-guest test run on one guest (no lab.role)"
limit=${LAB_CM_TIMEOUT:-120}
bw_port=18700
pp_port=18701
set -- -d "$LAB_DEV" -x "$LAB_GID_INDEX" -p "$bw_port" -F -D 30

case "$LAB_ROLE.$LAB_INCARNATION" in
client.1)
	# B: receive until the transfer runs, then ask the runner to kill this QEMU.
	log=$LAB_RESULTS/ib_send_bw-server.log
	lab_server_start "$limit" "$log" ib_send_bw "$@"
	lab_wait_listen tcp "$bw_port" 60 ib_send_bw "$log"
	lab_ready_signal 9100 "$limit"
	n=0
	until grep -q "remote address" "$log" 2>/dev/null; do
		n=$((n + 1))
		[ "$n" -lt 600 ] || lab_fail "ib_send_bw: A never connected: $(lab_tail "$log")"
		sleep 0.1
	done
	sleep 3
	lab_note "the transfer runs: asking the runner to kill this guest's QEMU"
	busybox sync
	cut -d' ' -f1 /proc/uptime >"$LAB_RESULTS/kill-me"
	busybox sync
	sleep 600
	lab_fail "still alive 600 s after asking to be killed"
	;;
server.*)
	# A: send to B until B dies; the sender must fail, not hang.
	log=$LAB_RESULTS/ib_send_bw-client.log
	lab_ready_wait 9100 120 ib_send_bw
	lab_note "client: ib_send_bw $* $LAB_PEER_IP"
	start=$(cut -d. -f1 /proc/uptime)
	timeout -k 5 "$limit" stdbuf -oL ib_send_bw "$@" "$LAB_PEER_IP" >"$log" 2>&1 </dev/null
	status=$?
	took=$(($(cut -d. -f1 /proc/uptime) - start))
	case "$status" in
	0) lab_fail "ib_send_bw finished without an error although its peer was killed: $(lab_tail "$log")" ;;
	124 | 137) lab_fail "ib_send_bw hung after its peer was killed (still running at the $limit s limit): $(lab_tail "$log")" ;;
	esac
	grep -qE "status 12|status 5|retry|[Ff]lush" "$log" ||
		lab_fail "ib_send_bw exited with status $status but with no retry-exceeded or flush completion: $(lab_tail "$log")"
	lab_summary "ib_send_bw to the dying peer: exited with status $status after $took s: $(grep -m 1 -E 'status 12|status 5|retry|[Ff]lush' "$log" | cut -c 1-120)"

	# The new B registers its GID again; A connects to it.
	log=$LAB_RESULTS/ibv_rc_pingpong-client.log
	lab_ready_wait 9101 180 "ibv_rc_pingpong with the restarted peer"
	set -- -d "$LAB_DEV" -g "$LAB_GID_INDEX" -s 4096 -n 200 -p "$pp_port" --chk
	lab_note "client: ibv_rc_pingpong $* $LAB_PEER_IP"
	timeout -k 5 "$limit" stdbuf -oL ibv_rc_pingpong "$@" "$LAB_PEER_IP" >"$log" 2>&1 </dev/null
	lab_check_exit "ibv_rc_pingpong client" "$?" "$log" "$limit"
	lab_expect "$log" "^200 iters in " ibv_rc_pingpong
	lab_summary "ibv_rc_pingpong -s 4096 -n 200 --chk with the restarted peer: $(grep -h ' iters in ' "$log")"
	;;
client.2)
	# The new B: serve A's pingpong.
	log=$LAB_RESULTS/ibv_rc_pingpong-server.log
	set -- -d "$LAB_DEV" -g "$LAB_GID_INDEX" -s 4096 -n 200 -p "$pp_port" --chk
	lab_serve_step ibv_rc_pingpong "$limit" "$log" tcp "$pp_port" 9101 ibv_rc_pingpong "$@"
	lab_expect "$log" "^200 iters in " ibv_rc_pingpong
	lab_summary "ibv_rc_pingpong -s 4096 -n 200 --chk, restarted, with $LAB_PEER_IP: $(grep -h ' iters in ' "$log")"
	;;
*) lab_fail "no part for $LAB_ROLE start $LAB_INCARNATION" ;;
esac
