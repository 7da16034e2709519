#!/bin/sh
# lab-about: two guests, one fabric, one-sided RDMA and events: the server guest (192.0.2.1) and the client guest (192.0.2.2), each with its own QEMU, pvrdma and driver, joined by the mux: rping -V (the server RDMA-READs the client's buffer and RDMA-WRITEs it back; 10 pings of 65000 bytes), ibv_rc_pingpong -e --chk, ib_write_bw and ib_read_lat, data verified on both sides
# lab-timeout: 400
# lab-guests: 2
. "$LAB_DIR/lib.sh"

[ -n "$LAB_ROLE" ] || lab_fail "a two-guest test run on one guest (no lab.role)"

lab_pair_step rping cm 7480 rping -s -v -V -a "$LAB_IP" -p 7480 -C 10 -S 65000 -- \
	rping -c -v -V -a "$LAB_PEER_IP" -p 7480 -C 10 -S 65000
lab_reject "$LAB_STEP_LOG" "data mismatch|error|failed|Failed|bogus" rping
if [ "$LAB_ROLE" = server ]; then
	n=$(grep -c "^server ping data: rdma-ping-[0-9]*: " "$LAB_STEP_LOG")
else
	n=$(grep -c "^ping data: rdma-ping-[0-9]*: " "$LAB_STEP_LOG")
fi
[ "$n" -eq 10 ] || lab_fail "rping: the $LAB_ROLE reported $n pings, not 10: $(lab_tail "$LAB_STEP_LOG")"
lab_summary "rping -S 65000 -C 10 with $LAB_PEER_IP: 10 pings, data verified (-V)"

# Polled, then event-driven completions on both sides (-e); each side checks what it receives (--chk).
lab_pair_pingpong ibv_rc_pingpong 4096 200 18514 --chk
lab_pair_pingpong ibv_rc_pingpong 4096 200 18515 -e --chk

# perftest's one-sided tools: the client writes (reads) the server's memory.
port=18600
for tool in ib_write_bw ib_read_lat; do
	set -- -d "$LAB_DEV" -x "$LAB_GID_INDEX" -p "$port" -F -n 200
	lab_pair_step "$tool" tcp "$port" "$tool" "$@" -- "$tool" "$@" "$LAB_PEER_IP"
	lab_reject "$LAB_STEP_LOG" "Couldn't|Unable|[Ff]ailed|error|Error" "$tool"
	if [ "$LAB_ROLE" = client ]; then
		result=$(grep -E "^ *[0-9]+ +[0-9]+ +[0-9]" "$LAB_STEP_LOG" | tail -n 1 | tr -s ' \t' '  ')
		[ -n "$result" ] || lab_fail "$tool: the client printed no result line: $(lab_tail "$LAB_STEP_LOG")"
		lab_summary "$tool -n 200 to $LAB_PEER_IP: $(grep -E '^ *#bytes' "$LAB_STEP_LOG" | tail -n 1 | tr -s ' \t' '  ') /$result"
	fi
	port=$((port + 1))
done
