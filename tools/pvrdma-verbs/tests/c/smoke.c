// SPDX-License-Identifier: GPL-2.0-only
/*
 * C smoke test: a libibverbs program, compiled against rdma-core's
 * <infiniband/verbs.h> and linked with -libverbs, run with the software
 * device preloaded (as QEMU runs). It goes through the real inline verbs
 * (ibv_post_send, ibv_poll_cq, ibv_req_notify_cq, the ibv_query_port and
 * ibv_reg_mr macros), so the struct layouts and ops are checked from C.
 */
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); exit(1); } } while (0)

static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int want)
{
	int got = 0;
	while (got < want) {
		int n = ibv_poll_cq(cq, want - got, wc + got);
		CHECK(n >= 0);
		if (n == 0)
			break;
		got += n;
	}
	return got;
}

int main(void)
{
	int num = 0;
	struct ibv_device **list = ibv_get_device_list(&num);
	CHECK(list && num == 1);
	CHECK(strcmp(ibv_get_device_name(list[0]), "pvrdma_sw0") == 0);
	struct ibv_context *ctx = ibv_open_device(list[0]);
	CHECK(ctx);
	ibv_free_device_list(list);

	struct ibv_device_attr dattr;
	CHECK(ibv_query_device(ctx, &dattr) == 0 && dattr.max_sge >= 4 && dattr.phys_port_cnt == 1);
	struct ibv_port_attr pattr;
	CHECK(ibv_query_port(ctx, 1, &pattr) == 0);
	CHECK(pattr.state == IBV_PORT_ACTIVE && pattr.link_layer == IBV_LINK_LAYER_ETHERNET);
	CHECK(pattr.gid_tbl_len > 1 && pattr.pkey_tbl_len == 1);
	union ibv_gid gid;
	CHECK(ibv_query_gid(ctx, 1, 0, &gid) == 0 && gid.raw[0] == 0xfe && gid.raw[1] == 0x80);
	CHECK(ibv_query_gid(ctx, 1, pattr.gid_tbl_len, &gid) != 0);

	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	CHECK(pd);
	char *buf = calloc(1, 8192);
	/*
	 * Constant flags: the macro calls the exported ibv_reg_mr; flags the
	 * compiler cannot see (QEMU's come from the guest): ibv_reg_mr_iova2.
	 */
	struct ibv_mr *mr_a = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	volatile int access_from_guest = IBV_ACCESS_LOCAL_WRITE;
	int access = access_from_guest;
	struct ibv_mr *mr_b = ibv_reg_mr(pd, buf + 4096, 4096, access);
	CHECK(mr_a && mr_b && mr_a->lkey != mr_b->lkey && mr_b->addr == buf + 4096);

	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	CHECK(ch && ch->fd >= 0);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, (void *)0x1234, ch, 0);
	CHECK(cq && cq->channel == ch);
	CHECK(ibv_req_notify_cq(cq, 0) == 0);

	/* RC pair over the default GID (index 0), each QP connected to the other. */
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_qp *qa = ibv_create_qp(pd, &ia);
	struct ibv_qp *qb = ibv_create_qp(pd, &ia);
	CHECK(qa && qb);
	struct ibv_qp *qs[2] = { qa, qb };
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
		CHECK(ibv_modify_qp(qs[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = qs[1 - i]->qp_num;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.dgid = gid;
		CHECK(ibv_query_gid(ctx, 1, 0, &a.ah_attr.grh.dgid) == 0);
		CHECK(ibv_modify_qp(qs[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7;
		CHECK(ibv_modify_qp(qs[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
		CHECK(qs[i]->state == IBV_QPS_RTS);
	}
	strcpy(buf, "hello from C");
	struct ibv_sge rsge = { .addr = (uintptr_t)buf + 4096, .length = 64, .lkey = mr_b->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &rsge, .num_sge = 1 }, *bad_r;
	CHECK(ibv_post_recv(qb, &rwr, &bad_r) == 0);
	struct ibv_sge ssge = { .addr = (uintptr_t)buf, .length = 13, .lkey = mr_a->lkey };
	struct ibv_send_wr swr = { .wr_id = 1, .sg_list = &ssge, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *bad_s;
	CHECK(ibv_post_send(qa, &swr, &bad_s) == 0);

	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 1000) == 1);
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq && ev_ctx == (void *)0x1234);
	CHECK(ibv_req_notify_cq(cq, 0) == 0);
	struct ibv_wc wc[4];
	CHECK(poll_n(cq, wc, 2) == 2);
	ibv_ack_cq_events(cq, 1);
	for (int i = 0; i < 2; i++) {
		CHECK(wc[i].status == IBV_WC_SUCCESS);
		if (wc[i].opcode == IBV_WC_RECV)
			CHECK(wc[i].wr_id == 2 && wc[i].byte_len == 13 && wc[i].qp_num == qb->qp_num &&
			      wc[i].src_qp == qa->qp_num);
		else
			CHECK(wc[i].opcode == IBV_WC_SEND && wc[i].wr_id == 1);
	}
	CHECK(strcmp(buf + 4096, "hello from C") == 0);

	/* UD: an AH, a GRH in the first 40 bytes of the receive buffer. */
	struct ibv_qp_init_attr ua = ia;
	ua.qp_type = IBV_QPT_UD;
	struct ibv_qp *qu = ibv_create_qp(pd, &ua);
	CHECK(qu);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11 };
	CHECK(ibv_modify_qp(qu, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0);
	a.qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(qu, &a, IBV_QP_STATE) == 0);
	a.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(qu, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
	struct ibv_ah_attr aha = { .is_global = 1, .port_num = 1, .grh = { .dgid = gid, .hop_limit = 1 } };
	struct ibv_ah *ah = ibv_create_ah(pd, &aha);
	CHECK(ah);
	memset(buf + 4096, 0, 128);
	rsge.length = 128;
	CHECK(ibv_post_recv(qu, &rwr, &bad_r) == 0);
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = qu->qp_num;
	swr.wr.ud.remote_qkey = 0x11;
	CHECK(ibv_post_send(qu, &swr, &bad_s) == 0);
	CHECK(poll_n(cq, wc, 2) == 2);
	struct ibv_wc *rw = wc[0].opcode == IBV_WC_RECV ? &wc[0] : &wc[1];
	CHECK(rw->status == IBV_WC_SUCCESS && rw->byte_len == 40 + 13 && (rw->wc_flags & IBV_WC_GRH));
	struct ibv_grh *grh = (struct ibv_grh *)(buf + 4096);
	CHECK(memcmp(&grh->dgid, &gid, 16) == 0 && memcmp(&grh->sgid, &gid, 16) == 0);
	CHECK(strcmp(buf + 4096 + sizeof(struct ibv_grh), "hello from C") == 0);
	CHECK(strcmp(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error") == 0);

	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(ibv_destroy_qp(qu) == 0 && ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0);
	CHECK(ibv_destroy_cq(cq) == 0);
	CHECK(ibv_destroy_comp_channel(ch) == 0);
	CHECK(ibv_dereg_mr(mr_a) == 0 && ibv_dereg_mr(mr_b) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	printf("c smoke ok\n");
	return 0;
}
