#!/bin/sh
# lab-about: ucmatose (rdma_cm, RC, TCP port space) server and client in the guest on 192.0.2.1, 4 connections x 10 messages: connection setup over QP1 through the mux
# lab-timeout: 300
. "$LAB_DIR/lib.sh"

lab_ucmatose 4 10 7471
