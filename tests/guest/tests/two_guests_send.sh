#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: two guests, one fabric, two-sided: the server guest (192.0.2.1) and the client guest (192.0.2.2), each with its own QEMU, pvrdma and driver, joined by the mux: ibv_rc_pingpong --chk (4096 and 65536 bytes), ibv_srq_pingpong --chk, ibv_ud_pingpong --chk, ib_send_bw, ib_send_lat and udaddy (SIDR through the mux; the 20 messages and 20 replies received are counted), data checked on both sides
# lab-timeout: 400
# lab-guests: 2
. "$LAB_DIR/lib.sh"

[ -n "$LAB_ROLE" ] || lab_fail "a two-guest test run on one guest (no lab.role)"

lab_pair_pingpong ibv_rc_pingpong 4096 200 18515 --chk
lab_pair_pingpong ibv_rc_pingpong 65536 200 18516 --chk
lab_pair_pingpong ibv_srq_pingpong 4096 200 18517 --chk -q 16
lab_pair_pingpong ibv_ud_pingpong 1024 200 18518 --chk

# perftest's two-sided tools, as perftest_send runs them in one guest.
lab_pair_perftest ib_send_bw 18600 -s 65536 -n 1000
lab_pair_perftest ib_send_lat 18601 -C -s 64 -n 1000

# udaddy: rdma_cm UD (SIDR through the mux), 2 address resolutions x 10
# messages; the work completions each side polls are counted (wc_audit).
lab_wc_audit
wc=$LAB_RESULTS/udaddy-$LAB_ROLE-wc.txt
lab_pair_step udaddy cm 7174 env WC_AUDIT_LOG="$wc" LD_PRELOAD="$LAB_WC_AUDIT" udaddy -b "$LAB_IP" -c 2 -C 10 -- \
	env WC_AUDIT_LOG="$wc" LD_PRELOAD="$LAB_WC_AUDIT" udaddy -s "$LAB_PEER_IP" -b "$LAB_IP" -c 2 -C 10
lab_reject "$LAB_STEP_LOG" "event: .*error|failed|failure|error:" udaddy
for line in "data transfers complete" "test complete" "return status 0"; do
	lab_expect "$LAB_STEP_LOG" "^$line\$" udaddy
done
[ -s "$wc" ] || lab_fail "udaddy $LAB_ROLE: no work completion count (wc_audit did not report)"
failed=$(lab_wc_count "$wc" failed)
[ "$failed" = 0 ] || lab_fail "udaddy $LAB_ROLE: $failed work completions failed: $(cat "$wc")"
# 20 messages of udaddy's 100 bytes each way, each after a 40-byte GRH.
recv=$(lab_wc_count "$wc" "recv ok")
bytes=$(sed -n 's/^wc-audit: .* recv ok [0-9]* (\([0-9]*\) bytes).*/\1/p' "$wc")
if [ "$LAB_ROLE" = client ] && [ "$LAB_MODEL" = stock ]; then
	# The stock model completes unsignaled sends too: the client's poll ends
	# on its own sends, before the replies (as in the single-guest udaddy).
	lab_note "udaddy client: $recv of 20 replies polled: the stock model completes the client's unsignaled sends, which end udaddy's poll first (replies unproven here)"
else
	[ "$recv" = 20 ] && [ "$bytes" = 2800 ] ||
		lab_fail "udaddy $LAB_ROLE: received $recv messages ($bytes bytes) from $LAB_PEER_IP, expected 20 of 140 bytes"
fi
lab_summary "udaddy -c 2 -C 10 with $LAB_PEER_IP: $(cat "$wc")"
