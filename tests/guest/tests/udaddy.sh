#!/bin/sh
# lab-about: udaddy (rdma_cm, UD: SIDR over QP1 through the mux) server and client in the guest on 192.0.2.1, 4 address resolutions x 10 messages
# lab-timeout: 300
. "$LAB_DIR/lib.sh"

conns=4
msgs=10
port=7174 # udaddy's fixed port
limit=120
srv=$LAB_RESULTS/udaddy-server.log
cli=$LAB_RESULTS/udaddy-client.log

lab_server_start "$limit" "$srv" udaddy -b "$LAB_IP" -c "$conns" -C "$msgs"
lab_wait_listen cm "$port" 60 udaddy "$srv"
lab_client_run "$limit" "$cli" udaddy -s "$LAB_IP" -b "$LAB_IP" -c "$conns" -C "$msgs"
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
lab_note "udaddy: $conns endpoints x $msgs messages: ok"
