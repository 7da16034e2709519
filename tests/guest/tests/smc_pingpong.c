// SPDX-License-Identifier: GPL-2.0
/*
 * smc_pingpong: one SMC-R connection (AF_SMC sockets), its data
 * checked, and the kernel's word (SMC_DIAG over NETLINK_SOCK_DIAG) on how it
 * went: over RDMA, or fallen back to TCP. Debian 12 has no smc-tools, so the
 * few configuration steps SMC needs are here too (generic netlink).
 *
 *   smc_pingpong server PORT BYTES       accept one connection on PORT, check
 *                                        BYTES of the pattern, echo them
 *   smc_pingpong client ADDR PORT BYTES  send BYTES of the pattern to ADDR,
 *                                        check the echo
 *   smc_pingpong ueid EID                add EID to SMC's user EID table
 *                                        (SMC-Rv2 is proposed and accepted
 *                                        only with a user EID both ends have)
 *   smc_pingpong pnet PNETID NETDEV IBDEV
 *                                        pair NETDEV with port 1 of IBDEV in
 *                                        SMC's pnet table
 *   smc_pingpong wait IBDEV SECONDS      wait until SMC has IBDEV's port 1 as
 *                                        active (SMC reads the port's
 *                                        attributes in a work item after it
 *                                        finds the device)
 *   smc_pingpong qp-caps IBDEV           what SMC learns of a new QP: an RC QP
 *                                        with SMC's capabilities, queried in
 *                                        RESET (SMC sizes its rings by
 *                                        ib_query_qp right after creating its
 *                                        QP); fails unless it reports at least
 *                                        those, within the device's maxima
 *
 * Byte i of the stream is pattern(i). While the connection is open, after
 * the data and before the close, each end finds its own socket in SMC_DIAG's
 * dump (by the inode of its descriptor) and prints
 *   smc: mode SMCR, device DEV port N, link ID, role ROLE, gid G, peer gid P
 *   smc: conn token T, sndbuf S, rmbe R, peer rmbe P
 * or "smc: mode FALLBACK reason R (NAME), peer diagnosis D (NAME)".
 * The last line says how many bytes were verified. Exit status 1 on a data
 * mismatch, a fallback to TCP, SMC-D, or any error, with a message.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/smc.h>
#include <linux/smc_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SMCPROTO_SMC 0 /* net/smc/smc.h: AF_SMC over IPv4 */
#define CHUNK 65536
#define IDLE_MS 60000 /* no progress for this long is a failure */

static const char *role;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("smc_pingpong %s: ", role);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	exit(1);
}

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)((i * 131) ^ (i >> 8) ^ (i >> 16));
}

static void check(const uint8_t *buf, size_t n, uint64_t off)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != pattern(off + i))
			die("data mismatch at byte %llu: 0x%02x, not 0x%02x",
			    (unsigned long long)(off + i), buf[i],
			    pattern(off + i));
}

/* The CLC decline codes of net/smc/smc_clc.h that a fallback reports. */
static const char *decl_name(uint32_t code)
{
	static const struct {
		uint32_t code;
		const char *name;
	} names[] = {
		{ 0x01010000, "MEM" },		{ 0x02010000, "TIMEOUT_CL" },
		{ 0x02020000, "TIMEOUT_AL" },	{ 0x03000000, "CNFERR" },
		{ 0x03010000, "PEERNOSMC" },	{ 0x03020000, "IPSEC" },
		{ 0x03030000, "NOSMCDEV" },	{ 0x03030001, "NOSMCDDEV" },
		{ 0x03030002, "NOSMCRDEV" },	{ 0x03030004, "NOV2EXT" },
		{ 0x03030008, "NOUEID" },	{ 0x03040000, "MODEUNSUPP" },
		{ 0x03060000, "OPTUNSUPP" },	{ 0x03070000, "DIFFPREFIX" },
		{ 0x03080000, "GETVLANERR" },	{ 0x030a0000, "NOACTLINK" },
		{ 0x030b0000, "NOSRVLINK" },	{ 0x030c0000, "VERSMISMAT" },
		{ 0x030e0000, "NOROUTE" },	{ 0x030f0000, "NOINDIRECT" },
		{ 0x04000000, "SYNCERR" },	{ 0x05000000, "PEERDECL" },
		{ 0x09990000, "INTERR" },	{ 0x09990001, "ERR_RTOK" },
		{ 0x09990002, "ERR_RDYLNK" },	{ 0x09990003, "ERR_REGBUF" },
	};
	size_t i;

	if (!code)
		return "none";
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].code == code)
			return names[i].name;
	return "?";
}

/* --- netlink ------------------------------------------------------------ */

struct nlreq {
	struct nlmsghdr nh;
	union {
		struct smc_diag_req diag;
		struct genlmsghdr genl;
	};
	char attrs[256];
};

static void nl_put(struct nlreq *req, uint16_t type, const void *data,
		   size_t len)
{
	size_t at = NLMSG_ALIGN(req->nh.nlmsg_len);
	struct nlattr *a = (void *)((char *)req + at);

	if (at + NLA_HDRLEN + len > sizeof(*req))
		die("netlink request too long");
	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	req->nh.nlmsg_len = at + NLA_ALIGN(a->nla_len);
}

/* Attribute `type` among those in [start, end), or NULL. */
static const struct nlattr *nl_attr(const void *start, const void *end,
				    uint16_t type)
{
	const struct nlattr *a = start;

	while ((const char *)a + NLA_HDRLEN <= (const char *)end &&
	       a->nla_len >= NLA_HDRLEN &&
	       (const char *)a + a->nla_len <= (const char *)end) {
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len));
	}
	return NULL;
}

static const void *nl_data(const struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

static size_t nl_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

typedef void (*nl_cb)(const struct nlmsghdr *nh, void *arg);

/*
 * Sends `req` on a new NETLINK socket of `proto` and hands every answer to
 * `cb` until the dump's end or the acknowledgement. Returns 0 or -errno.
 */
static int nl_talk(int proto, struct nlmsghdr *req, nl_cb cb, void *arg)
{
	static char buf[65536] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd, rc = 0, done = 0;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, proto);
	if (fd < 0)
		return -errno;
	req->nlmsg_seq = 1;
	if (sendto(fd, req, req->nlmsg_len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0) {
		rc = -errno;
		goto out;
	}
	while (!done) {
		const struct nlmsghdr *nh = (void *)buf;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		size_t left;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -ENODATA;
			break;
		}
		for (left = n; !done && left >= sizeof(*nh) &&
		     nh->nlmsg_len >= sizeof(*nh) && nh->nlmsg_len <= left;
		     left -= NLMSG_ALIGN(nh->nlmsg_len) < left ?
				     NLMSG_ALIGN(nh->nlmsg_len) : left,
		     nh = (const void *)((const char *)nh +
					 NLMSG_ALIGN(nh->nlmsg_len))) {
			if (nh->nlmsg_type == NLMSG_DONE) {
				/* a dump's end, with its error if it failed */
				if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) &&
				    *(const int *)NLMSG_DATA(nh) < 0)
					rc = *(const int *)NLMSG_DATA(nh);
				done = 1;
			} else if (nh->nlmsg_type == NLMSG_ERROR) {
				/* an acknowledgement (0) or an error */
				rc = ((const struct nlmsgerr *)NLMSG_DATA(nh))->error;
				done = 1;
			} else {
				if (cb)
					cb(nh, arg);
				/* a single answer (no dump, no ack asked) */
				if (!(nh->nlmsg_flags & NLM_F_MULTI) &&
				    !(req->nlmsg_flags & NLM_F_ACK))
					done = 1;
			}
		}
	}
out:
	close(fd);
	return rc;
}

static void genl_family_cb(const struct nlmsghdr *nh, void *arg)
{
	const struct genlmsghdr *g = NLMSG_DATA(nh);
	const struct nlattr *a;

	a = nl_attr(g + 1, (const char *)nh + nh->nlmsg_len,
		    CTRL_ATTR_FAMILY_ID);
	if (a && nl_len(a) >= sizeof(uint16_t))
		memcpy(arg, nl_data(a), sizeof(uint16_t));
}

/* A generic netlink request of `family` (by name), command `cmd`. */
static void genl_init(struct nlreq *req, const char *family, uint8_t cmd,
		      uint16_t flags)
{
	uint16_t id = 0;
	int rc;

	memset(req, 0, sizeof(*req));
	req->nh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	req->nh.nlmsg_type = GENL_ID_CTRL;
	req->nh.nlmsg_flags = NLM_F_REQUEST;
	req->genl.cmd = CTRL_CMD_GETFAMILY;
	req->genl.version = 1;
	nl_put(req, CTRL_ATTR_FAMILY_NAME, family, strlen(family) + 1);
	rc = nl_talk(NETLINK_GENERIC, &req->nh, genl_family_cb, &id);
	if (rc || !id)
		die("no generic netlink family %s (is the smc module loaded?): %s",
		    family, rc ? strerror(-rc) : "no id");

	memset(req, 0, sizeof(*req));
	req->nh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	req->nh.nlmsg_type = id;
	req->nh.nlmsg_flags = NLM_F_REQUEST | flags;
	req->genl.cmd = cmd;
	req->genl.version = 1;
}

/* --- configuration ------------------------------------------------------ */

static int cmd_ueid(const char *eid)
{
	char entry[SMC_MAX_EID_LEN + 1];
	struct nlreq req;
	int rc;

	/* 32 characters, padded with blanks, and the NUL smc_nl_add_ueid() counts */
	if (strlen(eid) > SMC_MAX_EID_LEN)
		die("EID '%s' is longer than %d characters", eid,
		    SMC_MAX_EID_LEN);
	snprintf(entry, sizeof(entry), "%-*s", SMC_MAX_EID_LEN, eid);
	genl_init(&req, SMC_GENL_FAMILY_NAME, SMC_NETLINK_ADD_UEID, NLM_F_ACK);
	nl_put(&req, SMC_NLA_EID_TABLE_ENTRY, entry, sizeof(entry));
	rc = nl_talk(NETLINK_GENERIC, &req.nh, NULL, NULL);
	if (rc && rc != -EEXIST)
		die("adding user EID '%s' failed: %s", eid, strerror(-rc));
	printf("smc: user EID '%s' in the table%s\n", eid,
	       rc ? " (already)" : "");
	return 0;
}

static int cmd_pnet(const char *pnetid, const char *netdev, const char *ibdev)
{
	uint8_t port = 1;
	struct nlreq req;
	int rc;

	genl_init(&req, SMCR_GENL_FAMILY_NAME, SMC_PNETID_ADD, NLM_F_ACK);
	nl_put(&req, SMC_PNETID_NAME, pnetid, strlen(pnetid) + 1);
	nl_put(&req, SMC_PNETID_ETHNAME, netdev, strlen(netdev) + 1);
	nl_put(&req, SMC_PNETID_IBNAME, ibdev, strlen(ibdev) + 1);
	nl_put(&req, SMC_PNETID_IBPORT, &port, sizeof(port));
	rc = nl_talk(NETLINK_GENERIC, &req.nh, NULL, NULL);
	if (rc && rc != -EEXIST)
		die("pnet table: %s with %s port 1 as %s failed: %s", netdev,
		    ibdev, pnetid, strerror(-rc));
	printf("smc: pnet table: %s and %s port 1 are %s%s\n", netdev, ibdev,
	       pnetid, rc ? " (already)" : "");
	return 0;
}

struct dev_state {
	const char *ibdev;
	int found, active;
	uint32_t ifindex;
};

/* An SMC_NETLINK_GET_DEV_SMCR answer: one RDMA device SMC has. */
static void dev_cb(const struct nlmsghdr *nh, void *arg)
{
	const char *end = (const char *)nh + nh->nlmsg_len;
	const struct genlmsghdr *g = NLMSG_DATA(nh);
	const struct nlattr *dev, *name, *port, *a;
	struct dev_state *st = arg;

	dev = nl_attr(g + 1, end, SMC_GEN_DEV_SMCR);
	if (!dev)
		return;
	end = (const char *)dev + dev->nla_len;
	name = nl_attr(nl_data(dev), end, SMC_NLA_DEV_IB_NAME);
	if (!name || strncmp(nl_data(name), st->ibdev, nl_len(name)))
		return;
	st->found = 1;
	port = nl_attr(nl_data(dev), end, SMC_NLA_DEV_PORT); /* port 1 */
	if (!port)
		return;
	end = (const char *)port + port->nla_len;
	a = nl_attr(nl_data(port), end, SMC_NLA_DEV_PORT_STATE);
	st->active = a && nl_len(a) >= 1 && *(const uint8_t *)nl_data(a);
	a = nl_attr(nl_data(port), end, SMC_NLA_DEV_PORT_NETDEV);
	if (a && nl_len(a) >= sizeof(uint32_t))
		memcpy(&st->ifindex, nl_data(a), sizeof(uint32_t));
}

static int cmd_wait(const char *ibdev, int seconds)
{
	struct dev_state st = { .ibdev = ibdev };
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	int tries = seconds * 10;
	struct nlreq req;
	int rc;

	for (;;) {
		st.found = st.active = 0;
		genl_init(&req, SMC_GENL_FAMILY_NAME, SMC_NETLINK_GET_DEV_SMCR,
			  NLM_F_DUMP);
		rc = nl_talk(NETLINK_GENERIC, &req.nh, dev_cb, &st);
		if (rc)
			die("SMC's RDMA devices: %s", strerror(-rc));
		if (st.active)
			break;
		if (tries-- <= 0 && st.found)
			die("SMC has %s, but not its port 1 as active, after %d s",
			    ibdev, seconds);
		if (tries < 0)
			die("SMC has no RDMA device %s after %d s", ibdev,
			    seconds);
		nanosleep(&ts, NULL);
	}
	printf("smc: %s port 1 active, its netdev ifindex %u\n", ibdev,
	       st.ifindex);
	return 0;
}

/* --- SMC_DIAG ----------------------------------------------------------- */

struct diag {
	uint64_t ino;
	int found;
	struct smc_diag_msg msg;
	int has_fallback, has_lgr, has_conn;
	struct smc_diag_fallback fallback;
	struct smc_diag_lgrinfo lgr;
	struct smc_diag_conninfo conn;
};

static void diag_cb(const struct nlmsghdr *nh, void *arg)
{
	const char *end = (const char *)nh + nh->nlmsg_len;
	const struct smc_diag_msg *r = NLMSG_DATA(nh);
	const void *attrs = (const char *)r + NLMSG_ALIGN(sizeof(*r));
	struct diag *d = arg;
	const struct nlattr *a;

	if (nh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    nh->nlmsg_len < NLMSG_LENGTH(sizeof(*r)) || r->diag_inode != d->ino)
		return;
	d->found = 1;
	d->msg = *r;
	a = nl_attr(attrs, end, SMC_DIAG_FALLBACK);
	if (a && nl_len(a) >= sizeof(d->fallback)) {
		memcpy(&d->fallback, nl_data(a), sizeof(d->fallback));
		d->has_fallback = 1;
	}
	a = nl_attr(attrs, end, SMC_DIAG_LGRINFO);
	if (a && nl_len(a) >= sizeof(d->lgr)) {
		memcpy(&d->lgr, nl_data(a), sizeof(d->lgr));
		d->has_lgr = 1;
	}
	a = nl_attr(attrs, end, SMC_DIAG_CONNINFO);
	if (a && nl_len(a) >= sizeof(d->conn)) {
		memcpy(&d->conn, nl_data(a), sizeof(d->conn));
		d->has_conn = 1;
	}
}

/*
 * What SMC_DIAG says of the connection on `fd`; fails unless it is SMC-R
 * with a link.
 */
static void report(int fd)
{
	struct diag d = { 0 };
	struct nlreq req;
	struct stat st;
	int rc;

	if (fstat(fd, &st))
		die("fstat: %s", strerror(errno));
	d.ino = st.st_ino;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.diag));
	req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.diag.diag_family = AF_SMC;
	req.diag.diag_ext = 1 << (SMC_DIAG_CONNINFO - 1) |
			    1 << (SMC_DIAG_LGRINFO - 1);
	rc = nl_talk(NETLINK_SOCK_DIAG, &req.nh, diag_cb, &d);
	if (rc)
		die("SMC_DIAG dump: %s (is the smc_diag module loaded?)",
		    strerror(-rc));
	if (!d.found)
		die("SMC_DIAG does not list this socket (inode %llu)",
		    (unsigned long long)d.ino);

	switch (d.msg.diag_mode) {
	case SMC_DIAG_MODE_SMCR:
		if (!d.has_lgr)
			die("SMC_DIAG: mode SMCR, but no link group");
		printf("smc: mode SMCR, device %.*s port %u, link %u, role %s, gid %.40s, peer gid %.40s\n",
		       (int)sizeof(d.lgr.lnk[0].ibname), d.lgr.lnk[0].ibname,
		       d.lgr.lnk[0].ibport, d.lgr.lnk[0].link_id,
		       d.lgr.role ? "server" : "client", d.lgr.lnk[0].gid,
		       d.lgr.lnk[0].peer_gid);
		if (d.has_conn)
			printf("smc: conn token 0x%x, sndbuf %u, rmbe %u, peer rmbe %u\n",
			       d.conn.token, d.conn.sndbuf_size,
			       d.conn.rmbe_size, d.conn.peer_rmbe_size);
		break;
	case SMC_DIAG_MODE_FALLBACK_TCP:
		printf("smc: mode FALLBACK reason 0x%08x (%s), peer diagnosis 0x%08x (%s)\n",
		       d.fallback.reason, decl_name(d.fallback.reason),
		       d.fallback.peer_diagnosis,
		       decl_name(d.fallback.peer_diagnosis));
		die("the connection fell back to TCP (reason 0x%08x %s, peer diagnosis 0x%08x %s)",
		    d.fallback.reason, decl_name(d.fallback.reason),
		    d.fallback.peer_diagnosis,
		    decl_name(d.fallback.peer_diagnosis));
		break;
	case SMC_DIAG_MODE_SMCD:
		printf("smc: mode SMCD\n");
		die("the connection is SMC-D, not SMC-R");
		break;
	default:
		die("SMC_DIAG: unknown mode %u", d.msg.diag_mode);
	}
	fflush(stdout);
}

/* --- the connection ----------------------------------------------------- */

static uint64_t number(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end)
		die("%s '%s' is not a number", what, s);
	return v;
}

static int smc_socket(void)
{
	int fd = socket(AF_SMC, SOCK_STREAM, SMCPROTO_SMC);

	if (fd < 0)
		die("socket(AF_SMC): %s (is the smc module loaded?)",
		    strerror(errno));
	return fd;
}

static int cmd_server(uint16_t port, uint64_t bytes)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	static uint8_t buf[CHUNK];
	uint64_t got = 0;
	int lfd, fd, one = 1;
	ssize_t n;

	lfd = smc_socket();
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 1))
		die("bind/listen on port %u: %s", port, strerror(errno));
	printf("smc_pingpong server: listening on port %u\n", port);
	fflush(stdout);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept: %s", strerror(errno));
	close(lfd);

	while (got < bytes) {
		size_t want = bytes - got < CHUNK ? bytes - got : CHUNK;
		size_t off = 0;

		n = recv(fd, buf, want, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("recv after %llu bytes: %s",
			    (unsigned long long)got, strerror(errno));
		if (n == 0)
			die("the client closed after %llu of %llu bytes",
			    (unsigned long long)got, (unsigned long long)bytes);
		check(buf, n, got);
		while (off < (size_t)n) {
			ssize_t w = send(fd, buf + off, n - off, MSG_NOSIGNAL);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				die("echo after %llu bytes: %s",
				    (unsigned long long)(got + off),
				    strerror(errno));
			off += w;
		}
		got += n;
	}
	report(fd);
	/* The client closes once it has its echo: nothing more may come. */
	do
		n = recv(fd, buf, 1, 0);
	while (n < 0 && errno == EINTR);
	if (n != 0)
		die("%s after the %llu bytes", n > 0 ? "more data" : strerror(errno),
		    (unsigned long long)bytes);
	close(fd);
	printf("smc_pingpong server: %llu bytes received, verified and echoed\n",
	       (unsigned long long)bytes);
	return 0;
}

static int cmd_client(const char *addr, uint16_t port, uint64_t bytes)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
	};
	static uint8_t tx[CHUNK], rx[CHUNK];
	uint64_t sent = 0, got = 0;
	int fd;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		die("'%s' is not an IPv4 address", addr);
	fd = smc_socket();
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect to %s:%u: %s", addr, port, strerror(errno));

	/* Send and read back at once: the echo must never wait for the sender. */
	while (got < bytes) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int rc;

		if (sent < bytes)
			p.events |= POLLOUT;
		rc = poll(&p, 1, IDLE_MS);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			die("poll: %s", strerror(errno));
		if (rc == 0)
			die("no progress for %d s: %llu bytes sent, %llu echoed",
			    IDLE_MS / 1000, (unsigned long long)sent,
			    (unsigned long long)got);
		if (p.revents & POLLOUT && sent < bytes) {
			size_t len = bytes - sent < CHUNK ? bytes - sent : CHUNK;
			size_t i;

			for (i = 0; i < len; i++)
				tx[i] = pattern(sent + i);
			n = send(fd, tx, len, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				die("send after %llu bytes: %s",
				    (unsigned long long)sent, strerror(errno));
			if (n > 0)
				sent += n;
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(fd, rx, sizeof(rx), MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				die("recv after %llu bytes: %s",
				    (unsigned long long)got, strerror(errno));
			if (n == 0)
				die("the server closed after %llu of %llu bytes",
				    (unsigned long long)got,
				    (unsigned long long)bytes);
			if (n > 0) {
				if (got + n > sent)
					die("%llu bytes echoed, only %llu sent",
					    (unsigned long long)(got + n),
					    (unsigned long long)sent);
				check(rx, n, got);
				got += n;
			}
		}
	}
	report(fd);
	close(fd);
	printf("smc_pingpong client: %llu bytes sent, echoed and verified\n",
	       (unsigned long long)bytes);
	return 0;
}

/*
 * An RC QP as net/smc/smc_ib.c smc_ib_create_queue_pair asks for one (16 send
 * work requests of 2 SGEs, 48 receives of 1), queried in RESET as
 * net/smc/smc_wr.c smc_wr_remember_qp_attr does right after: SMC takes its
 * link's send and receive ring sizes from that answer and sets up the work
 * requests of the rings (smc_wr_init_sge) by them.
 */
static int cmd_qp_caps(const char *ibdev)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 48,
			 .max_send_sge = 2, .max_recv_sge = 1 },
	};
	struct ibv_qp_init_attr init_out;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr dev;
	struct ibv_qp_attr attr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int i, n, err;

	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), ibdev))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		die("cannot open RDMA device %s", ibdev);
	err = ibv_query_device(ctx, &dev);
	if (err)
		die("ibv_query_device: %s", strerror(err));
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq: %s", strerror(errno));
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		die("ibv_create_qp: %s", strerror(errno));
	memset(&attr, 0, sizeof(attr));
	memset(&init_out, 0, sizeof(init_out));
	err = ibv_query_qp(qp, &attr, IBV_QP_STATE | IBV_QP_CAP, &init_out);
	if (err)
		die("ibv_query_qp: %s", strerror(err));
	printf("qp-caps: %s QP %u in state %d: send %u x %u, receive %u x %u (created with send %u x %u, receive %u x %u)\n",
	       ibdev, qp->qp_num, attr.qp_state, attr.cap.max_send_wr,
	       attr.cap.max_send_sge, attr.cap.max_recv_wr,
	       attr.cap.max_recv_sge, init.cap.max_send_wr,
	       init.cap.max_send_sge, init.cap.max_recv_wr,
	       init.cap.max_recv_sge);
	if (attr.qp_state != IBV_QPS_RESET)
		die("a new QP is in state %d, not RESET", attr.qp_state);
	/*
	 * At least what SMC asked for, at most the device's maxima: zeroes (what
	 * SMC's memset leaves where a driver writes nothing) and whatever else
	 * the caller's unset memory held fail alike.
	 */
	if (attr.cap.max_send_wr < 16 || attr.cap.max_recv_wr < 48 ||
	    attr.cap.max_send_sge < 2 || attr.cap.max_recv_sge < 1 ||
	    attr.cap.max_send_wr > (uint32_t)dev.max_qp_wr ||
	    attr.cap.max_recv_wr > (uint32_t)dev.max_qp_wr ||
	    attr.cap.max_send_sge > (uint32_t)dev.max_sge ||
	    attr.cap.max_recv_sge > (uint32_t)dev.max_sge)
		die("a QP in RESET does not report the capabilities it was created with to ibv_query_qp (send %u x %u, receive %u x %u; the device's maxima %d x %d): SMC-R sizes its link's rings by this query (smc_wr_remember_qp_attr right after creating its QP)",
		    attr.cap.max_send_wr, attr.cap.max_send_sge,
		    attr.cap.max_recv_wr, attr.cap.max_recv_sge,
		    dev.max_qp_wr, dev.max_sge);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	role = argc > 1 ? argv[1] : "";
	if (argc == 4 && !strcmp(argv[1], "server"))
		return cmd_server(number(argv[2], "port"),
				  number(argv[3], "byte count"));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return cmd_client(argv[2], number(argv[3], "port"),
				  number(argv[4], "byte count"));
	if (argc == 3 && !strcmp(argv[1], "ueid"))
		return cmd_ueid(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "pnet"))
		return cmd_pnet(argv[2], argv[3], argv[4]);
	if (argc == 4 && !strcmp(argv[1], "wait"))
		return cmd_wait(argv[2], number(argv[3], "seconds"));
	if (argc == 3 && !strcmp(argv[1], "qp-caps"))
		return cmd_qp_caps(argv[2]);
	fprintf(stderr,
		"usage: smc_pingpong server PORT BYTES\n"
		"       smc_pingpong client ADDR PORT BYTES\n"
		"       smc_pingpong ueid EID\n"
		"       smc_pingpong pnet PNETID NETDEV IBDEV\n"
		"       smc_pingpong wait IBDEV SECONDS\n"
		"       smc_pingpong qp-caps IBDEV\n");
	return 2;
}
