// SPDX-License-Identifier: Apache-2.0
/* route.c - next hops from the kernel's route and neighbour tables over
 * rtnetlink. A miss is resolved by the kernel: the caller sends that
 * datagram through the kernel socket, which triggers ARP. */
#include "ts_internal.h"

#include <ifaddrs.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <unistd.h>

/* One netlink socket for the process, opened at the first lookup and
 * kept, each round trip under nl_lock (the kernel answers within the
 * send: microseconds). Lookups run on whichever thread needs a next hop:
 * the control thread, an application thread joining a group or sending
 * when lwIP's cached next hop expired, the TCP helper thread. A socket
 * per thread (as before) left one more fd open whenever a thread looked
 * something up for the first time (tcp_cycles: "fds 17 after, 16
 * before"), and one fd behind for every such thread that ended. */
static pthread_mutex_t nl_lock = PTHREAD_MUTEX_INITIALIZER;
static int nl_fd = -1;
static pid_t nl_pid;
static uint32_t nl_seq;

static int nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	if (nl_fd >= 0 && nl_pid == getpid())
		return 0;
	if (nl_fd >= 0)
		ts_real_close(nl_fd);
	nl_fd = ts_real_socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
			       NETLINK_ROUTE);
	if (nl_fd < 0)
		return -errno;
	if (ts_real_bind(nl_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		ts_real_close(nl_fd);
		nl_fd = -1;
		return err;
	}
	nl_pid = getpid();
	return 0;
}

/* The process's netlink socket, opened now rather than at the first
 * lookup (the TCP helper thread, at its start: tcp_lwip.c), so that the
 * process's fds are settled when the library's constructor returns. */
int ts_route__open(void)
{
	int err;

	pthread_mutex_lock(&nl_lock);
	err = nl_open();
	pthread_mutex_unlock(&nl_lock);
	return err;
}

/* The child's only thread: a lookup another thread of the parent had
 * under way at the fork holds the lock for nobody here. */
void ts_route__reset_after_fork(void)
{
	pthread_mutex_init(&nl_lock, NULL);
	if (nl_fd >= 0)
		ts_real_close(nl_fd);
	nl_fd = -1;
}

static void add_attr(struct nlmsghdr *n, int type, const void *data, int len)
{
	struct rtattr *rta =
		(struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	rta->rta_type = (unsigned short)type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, (size_t)len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

/* Send a request and receive its single answer into buf (under nl_lock). */
static int nl_talk_locked(struct nlmsghdr *req, char *buf, size_t cap)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nlmsghdr *h;
	ssize_t n;
	int err;

	err = nl_open();
	if (err)
		return err;
	req->nlmsg_seq = ++nl_seq;
	if (ts_real_sendto(nl_fd, req, req->nlmsg_len, 0,
			   (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	for (;;) {
		n = ts_real_recv(nl_fd, buf, cap, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		h = (struct nlmsghdr *)buf;
		if (!NLMSG_OK(h, (unsigned int)n))
			return -EIO;
		if (h->nlmsg_seq != nl_seq)
			continue; /* stale answer */
		if (h->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(h);

			return e->error ? e->error : -ENOENT;
		}
		return (int)n;
	}
}

static int nl_talk(struct nlmsghdr *req, char *buf, size_t cap)
{
	int n;

	pthread_mutex_lock(&nl_lock);
	n = nl_talk_locked(req, buf, cap);
	pthread_mutex_unlock(&nl_lock);
	return n;
}

int ts_route__lookup(uint32_t daddr, struct ts_nexthop *nh)
{
	struct ts_flow fl = { .daddr = daddr };

	return ts_route__lookup_flow(&fl, nh);
}

int ts_route__lookup_flow(const struct ts_flow *fl, struct ts_nexthop *nh)
{
	uint32_t daddr = fl->daddr;
	struct {
		struct nlmsghdr n;
		struct rtmsg r;
		char attrs[128];
	} req;
	char buf[4096];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct rtmsg *r;
	struct rtattr *a;
	int len, n;

	memset(&req, 0, sizeof(req));
	req.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	req.n.nlmsg_type = RTM_GETROUTE;
	req.n.nlmsg_flags = NLM_F_REQUEST;
	req.r.rtm_family = AF_INET;
	req.r.rtm_dst_len = 32;
	req.r.rtm_tos = fl->tos;
	add_attr(&req.n, RTA_DST, &daddr, 4);
	if (fl->saddr) {
		req.r.rtm_src_len = 32;
		add_attr(&req.n, RTA_SRC, &fl->saddr, 4);
	}
	if (fl->oif)
		add_attr(&req.n, RTA_OIF, &fl->oif, 4);
	{
		uint32_t uid = (uint32_t)geteuid();
		uint8_t proto = IPPROTO_UDP;

		add_attr(&req.n, RTA_UID, &uid, 4);
		add_attr(&req.n, RTA_IP_PROTO, &proto, 1);
		if (fl->sport)
			add_attr(&req.n, RTA_SPORT, &fl->sport, 2);
		if (fl->dport)
			add_attr(&req.n, RTA_DPORT, &fl->dport, 2);
	}
	n = nl_talk(&req.n, buf, sizeof(buf));
	if (n < 0)
		return n;
	if (h->nlmsg_type != RTM_NEWROUTE)
		return -EIO;
	memset(nh, 0, sizeof(*nh));
	nh->daddr = daddr;
	r = NLMSG_DATA(h);
	nh->type = r->rtm_type;
	len = (int)h->nlmsg_len - NLMSG_LENGTH(sizeof(*r));
	for (a = RTM_RTA(r); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		switch (a->rta_type) {
		case RTA_OIF:
			memcpy(&nh->ifindex, RTA_DATA(a), 4);
			break;
		case RTA_GATEWAY:
			memcpy(&nh->gw, RTA_DATA(a), 4);
			break;
		case RTA_PREFSRC:
			memcpy(&nh->prefsrc, RTA_DATA(a), 4);
			break;
		}
	}
	return nh->ifindex > 0 ? 0 : -ENETUNREACH;
}

int ts_neigh__lookup(int ifindex, uint32_t addr, uint8_t mac[6])
{
	struct {
		struct nlmsghdr n;
		struct ndmsg nd;
		char attrs[64];
	} req;
	char buf[1024];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct ndmsg *nd;
	struct rtattr *a;
	int len, n, got = 0;

	memset(&req, 0, sizeof(req));
	req.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg));
	req.n.nlmsg_type = RTM_GETNEIGH;
	req.n.nlmsg_flags = NLM_F_REQUEST;
	req.nd.ndm_family = AF_INET;
	req.nd.ndm_ifindex = ifindex;
	add_attr(&req.n, NDA_DST, &addr, 4);
	n = nl_talk(&req.n, buf, sizeof(buf));
	if (n < 0)
		return n;
	if (h->nlmsg_type != RTM_NEWNEIGH)
		return -EIO;
	nd = NLMSG_DATA(h);
	if (!(nd->ndm_state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY |
			       NUD_PROBE | NUD_PERMANENT | NUD_NOARP)))
		return -ENOENT;
	len = (int)h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd));
	for (a = (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof(*nd)));
	     RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6) {
			memcpy(mac, RTA_DATA(a), 6);
			got = 1;
		}
	}
	return got ? 0 : -ENOENT;
}

/* ------------------------------------------------------------------ */
/* interfaces                                                          */

int ts_iface__allowed(const char *name)
{
	const char *p = ts_cfg.ifaces;
	size_t n = strlen(name);

	if (!*p)
		return 1;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == n && !strncmp(p, name, n))
			return 1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

/* Interfaces for addr (0: every candidate). Returns how many. */
int ts_iface__for(uint32_t addr, int *out, int max)
{
	struct ifaddrs *ifa, *i;
	int n = 0, k;

	if (getifaddrs(&ifa) < 0)
		return 0;
	for (i = ifa; i && n < max; i = i->ifa_next) {
		uint32_t a;
		int idx, dup = 0;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
		if (addr && a != addr)
			continue;
		if (!ts_iface__allowed(i->ifa_name))
			continue;
		idx = (int)if_nametoindex(i->ifa_name);
		for (k = 0; k < n; k++)
			dup |= out[k] == idx;
		if (idx > 0 && !dup)
			out[n++] = idx;
	}
	freeifaddrs(ifa);
	return n;
}
