#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: udaddy (rdma_cm, UD: SIDR over QP1 through the mux) server and client in the guest on 192.0.2.1, 4 address resolutions x 10 messages; the work completions both poll are counted (wc_audit.c): the server receives every message and the client every reply, each 100 bytes after a 40-byte GRH, none failed
# lab-timeout: 300
# lab-versions: 18
. "$LAB_DIR/lib.sh"

conns=4
msgs=10
port=7174 # udaddy's fixed port
limit=120
srv=$LAB_RESULTS/udaddy-server.log
cli=$LAB_RESULTS/udaddy-client.log

size=100   # udaddy's default message size
grh=40     # a UD receive starts with the GRH
lab_wc_audit
srv_wc=$LAB_RESULTS/udaddy-server-wc.txt
cli_wc=$LAB_RESULTS/udaddy-client-wc.txt

lab_server_start "$limit" "$srv" env WC_AUDIT_LOG="$srv_wc" LD_PRELOAD="$LAB_WC_AUDIT" \
	udaddy -b "$LAB_IP" -c "$conns" -C "$msgs"
lab_wait_listen cm "$port" 60 udaddy "$srv"
lab_client_run "$limit" "$cli" env WC_AUDIT_LOG="$cli_wc" LD_PRELOAD="$LAB_WC_AUDIT" \
	udaddy -s "$LAB_IP" -b "$LAB_IP" -c "$conns" -C "$msgs"
lab_check_pair udaddy "$limit" "$srv" "$cli"

# The server leaves its connect loop after $conns SIDR requests were answered,
# then receives $msgs messages on each endpoint before it replies.
for side in "$srv" "$cli"; do
	lab_reject "$side" "event: .*error|failed|failure|error:" "udaddy"
	lab_expect "$side" "^data transfers complete\$" "udaddy"
	lab_expect "$side" "^test complete\$" "udaddy"
	lab_expect "$side" "^return status 0\$" "udaddy"
done
lab_expect "$srv" "^sending replies\$" "udaddy server"
lab_expect "$cli" "^initiating data transfers\$" "udaddy client"

# udaddy counts any completion, of any status, as a message: what it polled
# is counted by wc_audit. The server must have received every message (then
# its signaled replies completed), the client every reply.
want=$((conns * msgs))
for side in server client; do
	wc_log=$LAB_RESULTS/udaddy-$side-wc.txt
	[ -s "$wc_log" ] || lab_fail "udaddy $side: no work completion count (wc_audit did not report)"
	lab_note "udaddy $side: $(cat "$wc_log")"
	failed=$(lab_wc_count "$wc_log" failed)
	[ "$failed" = 0 ] || lab_fail "udaddy $side: $failed work completions failed: $(cat "$wc_log")"
done
recv=$(lab_wc_count "$srv_wc" "recv ok")
bytes=$(sed -n 's/^wc-audit: .* recv ok [0-9]* (\([0-9]*\) bytes).*/\1/p' "$srv_wc")
[ "$recv" = "$want" ] && [ "$bytes" = "$((want * (size + grh)))" ] ||
	lab_fail "udaddy server: received $recv messages ($bytes bytes), expected $want of $((size + grh)) bytes"
[ "$(lab_wc_count "$srv_wc" "send ok")" = "$want" ] ||
	lab_fail "udaddy server: $(lab_wc_count "$srv_wc" "send ok") replies completed, expected $want"
cli_recv=$(lab_wc_count "$cli_wc" "recv ok")
if [ "$LAB_MODEL" = stock ]; then
	# The stock model completes unsignaled sends too: the client's poll for
	# $msgs completions per endpoint ends on its own sends, before the replies.
	lab_note "udaddy client: $cli_recv of $want replies polled: the stock model completes the client's unsignaled sends, which end udaddy's poll first (replies unproven here)"
else
	[ "$cli_recv" = "$want" ] || lab_fail "udaddy client: $cli_recv replies received, expected $want"
fi
lab_summary "udaddy: $conns endpoints x $msgs messages: the server received $recv, the client ${cli_recv} replies, no failed completion"
