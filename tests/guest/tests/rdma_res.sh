#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: `rdma res` (iproute2's resource tracking) while an ibv_rc_pingpong server (PD, CQ, QP, MR), an ibv_srq_pingpong server (SRQ) and then a ucmatose server (a listening cm_id on 192.0.2.1) wait for a client: each object is listed with the server's process (and ibv_rc_pingpong's user context), both drivers; with -dd the Rust driver adds its own details to every QP, CQ, SRQ and MR (the device's handle, where the rings are, page counts), also for the kernel's own QP1 and CQ, the C driver none (checked absent, noted); once a server is gone, no object of any kind rdma res lists (qp, cm_id, pd, mr, cq, ctx, srq) is left of it
# lab-timeout: 300
. "$LAB_DIR/lib.sh"

name=rdma_res

# res KIND TAG: `rdma res show KIND -dd` of the lab's device into the file $f. (Not a command
# substitution: lab_fail would end only its subshell.)
res() {
	f=$LAB_RESULTS/$name-$1-$2.txt
	timeout 30 rdma -dd resource show "$1" >"$f" 2>&1 ||
		lab_fail "$name: rdma -dd resource show $1 failed: $(lab_tail "$f")"
}

# pid_of NAME: the process ID of the running program NAME (the servers run under timeout(1),
# whose child they are; the kernel keeps 15 characters of a name).
pid_of() {
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = "$(printf %.15s "$1")" ] && echo "${p#/proc/}" && return 0
	done
}

# lines FILE PID: the entries of FILE that belong to process PID, one a line (iproute2 prints
# the driver's details, with -dd, on the entry's line, each name prefixed with `drv_`). By pid,
# not by name: iproute2 6.1 prints an SRQ's QP range where its `comm` belongs.
lines() {
	grep -E " pid $2 " "$1" || true
}

# has FILE WORDS WHAT: fails unless FILE holds the words WORDS (a regular expression).
has() {
	grep -qE "(^| )$2( |$)" "$1" || lab_fail "$name: $3: no '$2' in: $(lab_tail "$1")"
}

# Every kind of object `rdma resource show` lists (iproute2 6.1: `resource show
# [qp|cm_id|pd|mr|cq|ctx|srq]`).
kinds="qp cm_id pd mr cq ctx srq"

# held PID TAG: sets held to the kinds of which `rdma res` lists something of process PID.
held() {
	held=
	for kind in $kinds; do
		res "$kind" "$2"
		if grep -qE " pid $1 " "$f"; then
			held="${held:+$held }$kind"
		fi
	done
}

# orphans TAG WHEN: fails if `rdma res` lists, of any kind, an object of a process that has
# exited (WHEN: when that was looked for). The kernel gives a user object's pid only while its
# process lives (nldev.c, fill_res_name_pid()), and iproute2 prints a comm only from that pid or
# as a kernel object's owner, "comm [NAME]": so a line with neither " pid N " nor "comm [" is
# an object no process is left to own. (An empty list is what is left of a kind the kernel holds
# none of; res has checked that rdma answered.)
orphans() {
	for kind in $kinds; do
		res "$kind" "$1"
		if line=$(grep -m 1 -vE " pid [0-9]+ |comm \[|^ *\$" "$f"); then
			lab_fail "$name: $2, a $kind of no living process is listed: $line"
		fi
	done
}

# gone PID TAG WHAT: fails unless `rdma res` lists nothing of process PID (WHAT, which has
# exited) of any kind, not only of those it was seen to hold: none under its pid, none of no
# living process (orphans).
gone() {
	orphans "$2" "after $3 exited"
	for kind in $kinds; do
		f=$LAB_RESULTS/$name-$kind-$2.txt
		if line=$(grep -m 1 -E " pid $1 " "$f"); then
			lab_fail "$name: $3 exited, yet its $kind is still listed: $line"
		fi
	done
}

# server LISTEN PORT LOG CMD...: starts the server CMD (a program that holds its objects until a
# client comes), waits until it listens on PORT (LISTEN: tcp or cm), and sets server_pid.
server() {
	listen=$1
	port=$2
	log=$3
	shift 3
	lab_server_start 120 "$log" "$@"
	lab_wait_listen "$listen" "$port" 60 "$1 server" "$log"
	server_pid=$(pid_of "$1")
	[ -n "$server_pid" ] || lab_fail "$name: $1 listens, but no process has that name"
}

# own KIND TAG PID WHAT: lists KIND (res) and keeps the entries of process PID (WHAT) in the
# file $own; fails if there are none.
own() {
	res "$1" "$2"
	own=$LAB_RESULTS/$name-$1-$2-own.txt
	lines "$f" "$3" >"$own"
	[ -s "$own" ] || lab_fail "$name: rdma res show $1 lists nothing of $4 (pid $3): $(lab_tail "$f")"
}

# Before any server: no object left of a process that has exited (else the checks after each
# server would blame it for it).
orphans start "before the first server"

# Phase 1: an RC pingpong server holds a PD, a CQ, a QP, an MR and its user context until a
# client comes.
server tcp 18710 "$LAB_RESULTS/$name-rc-server.log" ibv_rc_pingpong -d "$LAB_DEV" -g "$LAB_GID_INDEX" -p 18710
rc_pid=$server_pid
for kind in pd cq qp mr ctx; do
	own "$kind" rc "$rc_pid" ibv_rc_pingpong
	if [ "$LAB_DRIVER" = rust ]; then
		case $kind in pd | ctx) continue ;; esac
		has "$own" "drv_dev_handle [0-9]+" "$kind of ibv_rc_pingpong"
	fi
done
qp=$LAB_RESULTS/$name-qp-rc.txt
cq=$LAB_RESULTS/$name-cq-rc.txt
mr=$LAB_RESULTS/$name-mr-rc.txt
if [ "$LAB_DRIVER" = rust ]; then
	has "$LAB_RESULTS/$name-qp-rc-own.txt" "drv_rings user" "the pingpong's QP"
	has "$LAB_RESULTS/$name-qp-rc-own.txt" "drv_send_cq_handle [0-9]+" "the pingpong's QP"
	has "$LAB_RESULTS/$name-cq-rc-own.txt" "drv_ring user" "the pingpong's CQ"
	has "$LAB_RESULTS/$name-mr-rc-own.txt" "drv_memory user" "the pingpong's MR"
	# The kernel's QP1 (the MAD agent's GSI QP) and its CQ live in the driver's memory.
	has "$qp" "drv_rings kernel" "the kernel's QP1"
	has "$cq" "drv_ring kernel" "the kernel's CQ"
	details="QP: $(grep -oE 'drv_dev_handle [0-9]+ .*' "$LAB_RESULTS/$name-qp-rc-own.txt" | head -n 1)"
else
	# The C driver has no fill_res_*_entry: -dd shows nothing of its own.
	for f in "$qp" "$cq" "$mr"; do
		if grep -q "drv_" "$f"; then
			lab_fail "$name: the C driver shows driver details now: check them too: $(lab_tail "$f")"
		fi
	done
	details="none from the C driver (it has no fill_res_*_entry)"
fi
held "$rc_pid" rc-held
rc_held=$held
lab_server_stop
gone "$rc_pid" rc-gone ibv_rc_pingpong

# Phase 2: an SRQ pingpong server holds an SRQ.
server tcp 18711 "$LAB_RESULTS/$name-srq-server.log" ibv_srq_pingpong -d "$LAB_DEV" -g "$LAB_GID_INDEX" -p 18711 -q 4
own srq srq "$server_pid" ibv_srq_pingpong
if [ "$LAB_DRIVER" = rust ]; then
	has "$own" "drv_dev_handle [0-9]+" "the SRQ of ibv_srq_pingpong"
	has "$own" "drv_ring_pages [0-9]+" "the SRQ of ibv_srq_pingpong"
elif grep -q "drv_" "$f"; then
	lab_fail "$name: the C driver shows SRQ details now: check them too: $(lab_tail "$f")"
fi
srq_pid=$server_pid
held "$srq_pid" srq-held
srq_held=$held
lab_server_stop
gone "$srq_pid" srq-gone ibv_srq_pingpong

# Phase 3: an rdma_cm listener (ucmatose's server, bound to the lab's address) holds a cm_id.
server cm 18712 "$LAB_RESULTS/$name-cm-server.log" ucmatose -b "$LAB_IP" -p 18712
cm_pid=$server_pid
own cm_id cm "$cm_pid" ucmatose
has "$own" "state LISTEN" "ucmatose's cm_id"
has "$own" "src-addr $LAB_IP:18712" "ucmatose's cm_id"
held "$cm_pid" cm-held
cm_held=$held
lab_server_stop
gone "$cm_pid" cm-gone ucmatose

lab_summary "$name: PD, CQ, QP, MR, user context and SRQ of the servers and ucmatose's listening cm_id listed; no object of any kind ($kinds) left of a server after it (ibv_rc_pingpong held: $rc_held; ibv_srq_pingpong: $srq_held; ucmatose: $cm_held); driver details: $details"
