#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: what the device does not offer fails at once with an error, never a hang or a kernel report: UC QPs (ibv_uc_pingpong), XRC (ibv_xsrq_pingpong), atomics (ib_atomic_bw, server and client), multicast (mckey); each tool must exit non-zero within 30 s having said why (the atomics client on the stock model, which sends atomics as SENDs that wait for a receive: once the server is stopped at 45 s)
# lab-timeout: 300
. "$LAB_DIR/lib.sh"

name=refusals
limit=30

# uptime_s: seconds since boot.
uptime_s() {
	cut -d. -f1 /proc/uptime
}

# check_refused WHAT STATUS LOG SECONDS: STATUS must be a failure of its own
# (not success, not the timeout), LOG must hold an error message.
check_refused() {
	case "$2" in
	0) lab_fail "$1: succeeded, but the device does not offer it: $(lab_tail "$3")" ;;
	124 | 137) lab_fail "$1: no answer within its time limit (hung): $(lab_tail "$3")" ;;
	esac
	why=$(grep -m 1 -iE "fail|couldn't|unable|error|not supported|invalid|denied" "$3")
	[ -n "$why" ] || lab_fail "$1: exited with status $2 without saying why: $(lab_tail "$3")"
	lab_summary "$1: refused in $4 s (status $2): $why"
}

# refused WHAT TAG CMD...: runs CMD alone (it must fail before it waits for a peer).
refused() {
	what=$1
	log=$LAB_RESULTS/$name-$2.log
	shift 2
	lab_note "$what: $*"
	start=$(uptime_s)
	timeout -k 5 "$limit" stdbuf -oL "$@" >"$log" 2>&1 </dev/null
	status=$?
	check_refused "$what" "$status" "$log" "$(($(uptime_s) - start))"
}

refused "UC QPs (ibv_uc_pingpong)" uc ibv_uc_pingpong -d "$LAB_DEV" -g "$LAB_GID_INDEX" -p 18650
refused "XRC (ibv_xsrq_pingpong)" xsrq ibv_xsrq_pingpong -d "$LAB_DEV" -g "$LAB_GID_INDEX" -p 18651
# mckey reports a failed join (RDMA_CM_EVENT_MULTICAST_ERROR) but exits 0
# anyway ("return status 0"): its log is checked instead of its status.
log=$LAB_RESULTS/$name-mckey.log
lab_note "multicast (mckey): mckey -m 239.1.1.1 -b $LAB_IP -C 1"
start=$(uptime_s)
timeout -k 5 "$limit" stdbuf -oL mckey -m 239.1.1.1 -b "$LAB_IP" -C 1 >"$log" 2>&1 </dev/null
status=$?
case "$status" in 124 | 137) lab_fail "multicast (mckey): no answer within $limit s (hung): $(lab_tail "$log")" ;; esac
why=$(grep -m 1 -E "RDMA_CM_EVENT_MULTICAST_ERROR|failure joining|unable to join" "$log")
[ -n "$why" ] || lab_fail "multicast (mckey): no failed join reported (status $status): $(lab_tail "$log")"
lab_reject "$log" "^mckey: (receiving|sending|data transfers complete)" "multicast (mckey): the join failed, yet"
lab_summary "multicast (mckey): refused in $(($(uptime_s) - start)) s: $why (mckey exits $status)"

# Atomics need a peer: the server waits for the client, and the client's
# atomic work requests (or its setup) must fail within the limit. (The server
# then waits for the client's closing handshake; it is stopped.)
# The stock model turns every work request into a SEND: the client's atomics
# reach a server that posted no receive, and wait there (perftest's RNR retries
# never run out) until the server is stopped at the limit; then the client's
# completions fail (status 12, retries exceeded). A longer limit only waits
# longer (120 s was seen to end the same way). The patched model fails them at
# once. The client is given 15 s more than the server: on the stock model it
# can only end after the server is stopped, and then it still has to see its
# retries exceeded and close down (seen under load: the error printed, then
# the client's own limit, which was the server's, reached before it exited).
atomic_limit=$limit
if [ "$LAB_MODEL" = stock ]; then
	atomic_limit=45
	lab_note "atomics: the stock model sends atomics as SENDs, which wait for a receive until the server is stopped (limit $atomic_limit s)"
fi
client_limit=$((atomic_limit + 15))
srv=$LAB_RESULTS/$name-atomic-server.log
cli=$LAB_RESULTS/$name-atomic-client.log
set -- -d "$LAB_DEV" -x "$LAB_GID_INDEX" -p 18652 -F -n 100
start=$(uptime_s)
lab_server_start "$atomic_limit" "$srv" ib_atomic_bw "$@"
if lab_wait_tcp_listen 18652 "$atomic_limit"; then
	cstart=$(uptime_s)
	lab_client_run "$client_limit" "$cli" ib_atomic_bw "$@" 127.0.0.1
	lab_note "atomics: the client ran $(($(uptime_s) - cstart)) s, the server ended with status $LAB_SERVER_STATUS"
	check_refused "atomics (ib_atomic_bw client)" "$LAB_CLIENT_STATUS" "$cli" "$(($(uptime_s) - start))"
else
	# The server refused before it listened.
	lab_server_wait
	check_refused "atomics (ib_atomic_bw server)" "$LAB_SERVER_STATUS" "$srv" "$(($(uptime_s) - start))"
fi
