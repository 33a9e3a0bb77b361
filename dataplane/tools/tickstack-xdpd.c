// SPDX-License-Identifier: Apache-2.0
/* tickstack-xdpd - the node's XDP daemon: the only tickstack component
 * that loads and attaches BPF. Pods get a unix socket and nothing more.
 *
 *   tickstack-xdpd [--run-dir DIR]                 serve (root)
 *   tickstack-xdpd ctl [--run-dir DIR] attach POD-UID IFNAME NETNS-PATH
 *   tickstack-xdpd ctl [--run-dir DIR] detach POD-UID
 *   tickstack-xdpd ctl [--run-dir DIR] status
 *
 * DIR/ctl.sock (0600, root): "attach UID IFNAME" with the pod's network
 * namespace fd, "detach UID", "status" (docs/dataplane.md, the contract in
 * the issue). At attach the daemon enters the pod's network namespace,
 * loads the steering program (its own copy per pod interface: maps are
 * never shared between pods, nothing is pinned) and attaches it to IFNAME
 * there, then serves DIR/pods/UID/xdp.sock, the pod's only view.
 *
 * DIR/node/xdp.sock (0666; DIR/node holds nothing else) is the same
 * protocol for every pod at once: a pod that cannot mount a host path
 * (Pod Security "restricted") gets DIR/node from the node's device plugin
 * (tickstack.io/xdpd, a read-only mount the pod spec never shows). Which
 * pod a connection belongs to is read from the caller, never from a path:
 * its network namespace (SO_PEERPIDFD, the pidfd's namespace) must be one
 * the CNI plugin attached, and that attachment is the pod.
 *
 * On the pod socket (src/xdpd_proto.h) a process of the pod hands over its
 * XSK and asks for steering entries, proving each with its kernel socket.
 * Every request is checked: the caller's network namespace (through a
 * pidfd, no pid reuse race) and every passed fd's namespace are the pod's,
 * the interface is the pod's, the socket is bound to what it asks for.
 * The daemon owns every map fd; a process never sees one. When a
 * connection closes (the process exited, or was killed) its XSKMAP slots
 * and steering entries are deleted at once.
 *
 * What a pod can send is bounded (src/xdpd_proto.h): message size, fds per
 * message, connections per pod, steering entries per connection and per
 * pod interface; each refusal names its limit, and refusals are logged at
 * most LOG_BURST per LOG_INTERVAL_MS per pod, with a count of those held
 * back. Nothing is ever changed through a path a pod can write: the pod's
 * socket gets its mode when it is bound, and its directory is changed
 * through an fd opened without following links.
 *
 * A restart is invisible to the pods: DIR/state names what is attached,
 * and the next daemon takes it over, maps and entries included ("state
 * across restarts" below; SIGTERM leaves the programs attached for it).
 *
 * One thread, one epoll loop: setns() moves this thread alone. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "steer_common.h"
#include "steer.skel.h"
#include "steer_hw.skel.h"
#include "xdpd_proto.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef SIOCGSKNS
#define SIOCGSKNS 0x894C
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef PIDFD_GET_NET_NAMESPACE /* linux/pidfd.h, Linux 6.11 */
#define PIDFD_GET_NET_NAMESPACE _IO(0xFF, 4)
#endif

#define DEFAULT_RUN_DIR "/run/tickstack/xdp"
#define STATE_NAME "state" /* DIR/state: what the daemon attached */
/* a refused connection: requests already queued that are read (and
 * dropped) so that the close does not turn into a reset hiding the reply */
#define REFUSE_DRAIN_MAX 4
/* refusals logged per pod (and for the control socket) per interval */
#define LOG_BURST 10
#define LOG_INTERVAL_MS 5000

_Static_assert(TS_XDPD_IF_ENTRIES == TS_STEER_MAX_ENTRIES,
	       "a pod's entries on an interface fill exactly its steering map");
_Static_assert(TS_XDPD_CLIENT_ENTRIES <= TS_XDPD_IF_ENTRIES,
	       "a connection's entries fit its pod's map");

struct entry {
	int att;                 /* index in pod->ifs */
	struct ts_steer_key key;
	uint64_t ino;            /* the kernel socket that proved it */
};

struct client;

struct att {                     /* the program on one interface of a pod */
	char ifname[IF_NAMESIZE];
	int ifindex;
	int mode;                /* XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE */
	struct steer_bpf *skel;  /* the program: the plain one, or */
	struct steer_hw_bpf *hwskel; /* the device-bound one (--rx-hwtstamp) */
	struct bpf_object *obj;  /* whichever is loaded (NULL: none) */
	int hw;                  /* it is ts_steer_hw: frames carry metadata */
	int prog_fd, steer_fd, xsks_fd, qown_fd; /* its program and maps */
	struct client *qown[TS_XSKS_MAX];
	uint64_t qbytes[TS_XSKS_MAX]; /* UMEM the daemon registered there */
	uint8_t qsg[TS_XSKS_MAX];     /* its XSK takes jumbo frames as chains
				       * (XDP_USE_SG): entries say so */
	int nents;               /* steering entries of every client here */
	__u32 prog_id;           /* the attached program's id (state file) */
};

struct evsrc {                   /* what an epoll event points at */
	int type;
	void *p;
};
enum { EV_CTL_LISTEN = 1, EV_CTL_CONN, EV_POD_LISTEN, EV_NODE_LISTEN, EV_CLIENT,
       EV_SIGNAL, EV_GHOST };

struct ratelimit {               /* refusal log lines of one pod */
	int64_t start;           /* the interval's start (monotonic ms) */
	int logged;              /* lines logged in it */
	unsigned long held;      /* lines held back in it */
};

struct pod {
	char uid[72];
	int nsfd;
	uint64_t ns_ino, ns_dev;
	struct att ifs[TS_XDPD_POD_IFS];
	int nifs;
	int lfd;                 /* DIR/pods/UID/xdp.sock */
	int dfd;                 /* DIR/pods/UID, opened O_NOFOLLOW */
	struct evsrc ev;
	struct ratelimit rl;
	char dir[160];
	struct client *clients;
	int nclients;
	struct pod *next;
};

/* A connection, or (fd -1) a ghost: a process that held entries and
 * queues before the daemon restarted, recovered from the maps, watched
 * through its pidfd until it connects again (its entries become that
 * connection's) or exits (they go). */
struct client {
	int fd;
	struct pod *pod;
	pid_t pid;               /* in the daemon's pid namespace */
	uid_t uid;
	int pidfd;
	struct entry *ents;
	int nents, cap;
	struct evsrc ev;
	struct client *next;
};

struct ctlconn {
	int fd;
	struct evsrc ev;
};

static const char *run_dir = DEFAULT_RUN_DIR;
/* --rx-hwtstamp: attach the device-bound ts_steer_hw (native XDP), whose
 * frames carry their hardware receive time for TICKSTACK_RX_HWTSTAMP=1
 * (docs/dataplane.md, "Timestamps"); where the kernel or the driver
 * refuses it the plain program, the reason logged and counted here */
static int rx_hwtstamp;
static unsigned long long hw_fallbacks;
static int host_ns = -1;
static int epfd = -1;
static struct pod *pods;
static struct ratelimit ctl_rl; /* refusals on the control socket */
static struct ratelimit node_rl; /* refusals on DIR/node/xdp.sock before a
				  * pod is known */

static void state_save(void);

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tickstack-xdpd: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Say how many lines an interval held back, and start a new one. */
static void rl_flush(struct ratelimit *rl, const char *who, int64_t now)
{
	if (rl->held)
		logf_("%s: %lu more refusals in %d s not logged (at most %d "
		      "per %d s)", who, rl->held, LOG_INTERVAL_MS / 1000,
		      LOG_BURST, LOG_INTERVAL_MS / 1000);
	rl->start = now;
	rl->logged = 0;
	rl->held = 0;
}

/* Log a refusal as "WHO: ...", at most LOG_BURST per LOG_INTERVAL_MS: a
 * pod that sends nothing but bad requests cannot flood the node's log. */
static void vrefusal(struct ratelimit *rl, const char *who, const char *fmt,
		     va_list ap) __attribute__((format(printf, 3, 0)));
static void vrefusal(struct ratelimit *rl, const char *who, const char *fmt,
		     va_list ap)
{
	int64_t now = now_ms();
	char line[400];

	if (now - rl->start >= LOG_INTERVAL_MS)
		rl_flush(rl, who, now);
	if (rl->logged >= LOG_BURST) {
		rl->held++;
		return;
	}
	rl->logged++;
	vsnprintf(line, sizeof(line), fmt, ap);
	logf_("%s: %s", who, line);
}

static void refusal(struct ratelimit *rl, const char *who, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));
static void refusal(struct ratelimit *rl, const char *who, const char *fmt,
		    ...)
{
	va_list ap;

	va_start(ap, fmt);
	vrefusal(rl, who, fmt, ap);
	va_end(ap);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* ---- messages: one request or reply per SEQPACKET message, at most one fd */

static int msg_send(int fd, const char *buf, size_t len, int passfd)
{
	char cbuf[TS_XDPD_CBUF_ONE];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (passfd >= 0)
		ts_xdpd_fd__attach(&mh, cbuf, passfd);
	return sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static void reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(int fd, const char *fmt, ...)
{
	char buf[TS_XDPD_MSG_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	msg_send(fd, buf, (size_t)n, -1);
}

/* Receive one message; *passfd gets the one fd it carried (or -1). More
 * than one fd, a truncated message or truncated control data: -EPROTO; a
 * NUL byte in it: -EBADMSG (every fd received is closed either way). 0 on
 * EOF (or a message of length 0), else the length received; buf holds the
 * text without a trailing newline. */
static ssize_t msg_recv(int fd, char *buf, size_t cap, int *passfd)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = cap - 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	int bad;
	ssize_t n;

	*passfd = -1;
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	bad = ts_xdpd_fd__take(&mh, passfd, close) > 0;
	if (!n || bad || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    memchr(buf, 0, (size_t)n)) {
		/* an fd with a message of length 0 (taken for EOF) is
		 * closed as well */
		if (*passfd >= 0)
			close(*passfd);
		*passfd = -1;
		if (!n)
			return 0;
		return bad || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ?
			       -EPROTO : -EBADMSG;
	}
	/* a trailing newline is dropped from the text, not from the length:
	 * a request of "\n" alone is an empty request, not the end */
	buf[n] = 0;
	if (buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return n;
}

/* ---- namespaces */

static int fd_ns_id(int fd, uint64_t *ino, uint64_t *dev)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	*ino = st.st_ino;
	*dev = st.st_dev;
	return 0;
}

static int enter_ns(int nsfd)
{
	return setns(nsfd, CLONE_NEWNET) ? -errno : 0;
}

static void leave_ns(void)
{
	if (setns(host_ns, CLONE_NEWNET)) {
		/* the daemon would act in a pod's namespace from now on */
		logf_("cannot return to the node's network namespace: %s",
		      strerror(errno));
		abort();
	}
}

/* Whether the socket fd lives in the pod's network namespace. */
static int sock_in_pod(int fd, const struct pod *p)
{
	uint64_t ino, dev;
	int ns = ioctl(fd, SIOCGSKNS);
	int ok;

	if (ns < 0)
		return 0;
	ok = !fd_ns_id(ns, &ino, &dev) && ino == p->ns_ino && dev == p->ns_dev;
	close(ns);
	return ok;
}

/* The network namespace the client process runs in now: asked of the
 * pidfd taken at connect time (Linux 6.11), else its /proc entry is read
 * and then the pidfd says the process is still alive, so the pid was not
 * reused meanwhile. 0, or -1: the process is gone. */
static int client_ns(const struct client *c, uint64_t *ino, uint64_t *dev)
{
	int ns = ioctl(c->pidfd, PIDFD_GET_NET_NAMESPACE, 0);
	char path[64];
	struct stat st;

	if (ns >= 0) {
		int err = fd_ns_id(ns, ino, dev);

		close(ns);
		return err ? -1 : 0;
	}
	if (errno == ESRCH)
		return -1; /* the process is gone */
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)c->pid);
	if (stat(path, &st))
		return -1;
	if (syscall(SYS_pidfd_send_signal, c->pidfd, 0, NULL, 0))
		return -1;
	*ino = (uint64_t)st.st_ino;
	*dev = (uint64_t)st.st_dev;
	return 0;
}

/* Whether the client process still runs in the pod's network namespace. */
static int client_in_pod(const struct client *c)
{
	uint64_t ino = 0, dev = 0;

	return !client_ns(c, &ino, &dev) && ino == c->pod->ns_ino &&
	       dev == c->pod->ns_dev;
}

/* ---- pods */

static int valid_uid(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n >= sizeof(((struct pod *)0)->uid) || !strcmp(s, ".") ||
	    !strcmp(s, ".."))
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '_' || s[i] == '.'))
			return 0;
	return 1;
}

static int valid_ifname(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n >= IF_NAMESIZE || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] == '/' || s[i] == ':' || s[i] > '~')
			return 0;
	return 1;
}

/* The pod attached in the network namespace (ino, dev), or NULL. */
static struct pod *pod_by_ns(uint64_t ino, uint64_t dev)
{
	struct pod *p;

	for (p = pods; p; p = p->next)
		if (p->ns_ino == ino && p->ns_dev == dev)
			return p;
	return NULL;
}

static struct pod *pod_find(const char *uid)
{
	struct pod *p;

	for (p = pods; p; p = p->next)
		if (!strcmp(p->uid, uid))
			return p;
	return NULL;
}

static struct att *att_find(struct pod *p, const char *ifname, int *idx)
{
	int i;

	for (i = 0; i < p->nifs; i++)
		if (!strcmp(p->ifs[i].ifname, ifname)) {
			if (idx)
				*idx = i;
			return &p->ifs[i];
		}
	return NULL;
}

/* pod_new: a pod's record, not yet listening (lfd, dfd -1), its network
 * namespace fd still to set; NULL without memory. */
static struct pod *pod_new(const char *uid, uint64_t ino, uint64_t dev)
{
	struct pod *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	snprintf(p->uid, sizeof(p->uid), "%.71s", uid);
	p->ns_ino = ino;
	p->ns_dev = dev;
	p->lfd = -1;
	p->dfd = -1;
	p->rl.start = now_ms();
	p->ev.type = EV_POD_LISTEN;
	p->ev.p = p;
	return p;
}

static void pod_refusal(struct pod *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void pod_refusal(struct pod *p, const char *fmt, ...)
{
	char who[96];
	va_list ap;

	snprintf(who, sizeof(who), "pod %s", p->uid);
	va_start(ap, fmt);
	vrefusal(&p->rl, who, fmt, ap);
	va_end(ap);
}

static int map_count(int fd)
{
	struct ts_steer_key k, next;
	void *prev = NULL;
	int n = 0;

	while (!bpf_map_get_next_key(fd, prev, &next) && n < TS_STEER_MAX_ENTRIES) {
		k = next;
		prev = &k;
		n++;
	}
	return n;
}

#ifndef BPF_F_XDP_DEV_BOUND_ONLY
#define BPF_F_XDP_DEV_BOUND_ONLY (1U << 6) /* Linux 6.3; older uapi headers */
#endif

/* Whether name is one of our steering programs' (TS_PROG_NAME: the plain
 * one, TS_PROG_NAME_HW: the device-bound one); 1 for the device-bound. */
static int steer_name(const char *name, int *hw)
{
	if (!strcmp(name, TS_PROG_NAME)) {
		*hw = 0;
		return 1;
	}
	if (!strcmp(name, TS_PROG_NAME_HW)) {
		*hw = 1;
		return 1;
	}
	return 0;
}

/* Open (not load) a's program: the device-bound ts_steer_hw (hw: bound to
 * a->ifindex of the current namespace, which the verifier needs for the
 * kfunc) or the plain ts_steer. */
static int att_open(struct att *a, int hw)
{
	struct bpf_program *pr;

	a->hw = hw;
	if (!hw) {
		a->skel = steer_bpf__open();
		if (!a->skel)
			return errno ? -errno : -ENOMEM;
		a->obj = a->skel->obj;
		return 0;
	}
	a->hwskel = steer_hw_bpf__open();
	if (!a->hwskel)
		return errno ? -errno : -ENOMEM;
	a->obj = a->hwskel->obj;
	pr = a->hwskel->progs.ts_steer_hw;
	bpf_program__set_ifindex(pr, (__u32)a->ifindex);
	bpf_program__set_flags(pr, bpf_program__flags(pr) |
					   BPF_F_XDP_DEV_BOUND_ONLY);
	return 0;
}

static int att_load(struct att *a)
{
	int err = a->hw ? steer_hw_bpf__load(a->hwskel) :
			  steer_bpf__load(a->skel);

	if (err)
		return err < 0 ? err : -EINVAL;
	a->prog_fd = a->hw ? bpf_program__fd(a->hwskel->progs.ts_steer_hw) :
			     bpf_program__fd(a->skel->progs.ts_steer);
	a->steer_fd = bpf_map__fd(bpf_object__find_map_by_name(a->obj,
								 TS_MAP_STEER));
	a->xsks_fd = bpf_map__fd(bpf_object__find_map_by_name(a->obj,
								TS_MAP_XSKS));
	a->qown_fd = bpf_map__fd(bpf_object__find_map_by_name(a->obj,
								TS_MAP_QOWN));
	return 0;
}

/* Close a's program and maps (fds only: what is attached stays). */
static void att_close(struct att *a)
{
	if (a->skel)
		steer_bpf__destroy(a->skel);
	if (a->hwskel)
		steer_hw_bpf__destroy(a->hwskel);
	a->skel = NULL;
	a->hwskel = NULL;
	a->obj = NULL;
	a->prog_fd = a->steer_fd = a->xsks_fd = a->qown_fd = -1;
}

/* Load our own copy of the program and attach it to ifname in the pod's
 * namespace: native, else generic; never over another program. */
/* The program attached to ifindex (current netns) when it is a steering
 * program (by name) that no daemon state holds: one left by a daemon that
 * died without detaching (SIGKILL, a crash: the attachment keeps it and its
 * maps alive). Its fd and attach mode, or -1. The caller knows the pod's
 * interface is not in its own state. */
static int att_leftover(int ifindex, int *mode)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd, hw;

	if (bpf_xdp_query(ifindex, 0, &q) || !q.prog_id)
		return -1;
	if (q.attach_mode == XDP_ATTACHED_DRV)
		*mode = XDP_FLAGS_DRV_MODE;
	else if (q.attach_mode == XDP_ATTACHED_SKB)
		*mode = XDP_FLAGS_SKB_MODE;
	else
		return -1;
	fd = bpf_prog_get_fd_by_id(q.prog_id);
	if (fd < 0)
		return -1;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    !steer_name(info.name, &hw)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The id of the program behind fd, or 0. */
static __u32 prog_id_of(int fd)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* Attach a's program: with --rx-hwtstamp the device-bound one in native
 * mode first; then the plain one, native, else generic. A program an
 * earlier daemon left (att_leftover) is replaced, never another one. */
static int att_attach(struct pod *p, struct att *a, char *why, size_t wl)
{
	static const struct {
		int hw, mode;
	} tries[3] = { { 1, XDP_FLAGS_DRV_MODE }, { 0, XDP_FLAGS_DRV_MODE },
		       { 0, XDP_FLAGS_SKB_MODE } };
	char hwwhy[160] = "";
	int err, i;

	a->prog_fd = a->steer_fd = a->xsks_fd = a->qown_fd = -1;
	err = enter_ns(p->nsfd);
	if (err) {
		snprintf(why, wl, "cannot enter the pod's network namespace: %s",
			 strerror(-err));
		return err;
	}
	a->ifindex = (int)if_nametoindex(a->ifname);
	if (!a->ifindex) {
		err = -errno;
		snprintf(why, wl, "no interface %s in the pod's network namespace; "
			 "attach after the interface is moved into it",
			 a->ifname);
		goto out;
	}
	err = -EINVAL;
	for (i = rx_hwtstamp ? 0 : 1; i < 3; i++) {
		int hw = tries[i].hw;

		if (!a->obj || a->hw != hw) {
			att_close(a);
			err = att_open(a, hw);
			if (!err)
				err = att_load(a);
			if (err && hw) { /* a kernel or driver without it */
				snprintf(hwwhy, sizeof(hwwhy), "loading it: %s",
					 strerror(-err));
				att_close(a);
				continue;
			}
			if (err) {
				snprintf(why, wl, "loading the steering program "
					 "failed: %s; the daemon needs CAP_BPF, "
					 "CAP_NET_ADMIN and CAP_SYS_ADMIN",
					 strerror(-err));
				att_close(a);
				goto out;
			}
		}
		err = bpf_xdp_attach(a->ifindex, a->prog_fd,
				     (__u32)tries[i].mode |
					     XDP_FLAGS_UPDATE_IF_NOEXIST,
				     NULL);
		if (!err) {
			a->mode = tries[i].mode;
			goto out;
		}
		if (err == -EBUSY || err == -EEXIST) {
			LIBBPF_OPTS(bpf_xdp_attach_opts, o);
			int mode = 0;

			o.old_prog_fd = att_leftover(a->ifindex, &mode);
			if (o.old_prog_fd < 0)
				break;
			/* replace exactly that one (XDP_FLAGS_REPLACE); the
			 * device-bound program only in native mode */
			err = hw && mode != XDP_FLAGS_DRV_MODE ? -EOPNOTSUPP :
				bpf_xdp_attach(a->ifindex, a->prog_fd,
					       (__u32)mode, &o);
			close(o.old_prog_fd);
			if (!err) {
				a->mode = mode;
				logf_("pod %s: %s: replaced a steering program an "
				      "earlier tickstack-xdpd left attached",
				      p->uid, a->ifname);
				goto out;
			}
			if (!hw)
				break;
		}
		if (hw)
			snprintf(hwwhy, sizeof(hwwhy), "attaching it in native "
				 "mode: %s", strerror(-err));
	}
	snprintf(why, wl, "attaching XDP to %s failed: %s%s", a->ifname,
		 strerror(-err),
		 err == -EBUSY || err == -EEXIST ?
			 " (another XDP program is attached: detach it first)" :
			 "");
	att_close(a);
out:
	if (!err) {
		a->prog_id = prog_id_of(a->prog_fd);
		if (hwwhy[0]) {
			/* the pod's processes count hw_unbound */
			hw_fallbacks++;
			logf_("pod %s: %s: --rx-hwtstamp: the device-bound "
			      "program (hardware receive stamps) is refused, %s: "
			      "the plain one is attached, its frames carry no "
			      "hardware stamps (%llu interfaces so far)", p->uid,
			      a->ifname, hwwhy, hw_fallbacks);
		}
	}
	leave_ns();
	return err;
}

static void att_detach(struct pod *p, struct att *a)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, o);

	if (!a->obj)
		return;
	o.old_prog_fd = a->prog_fd;
	if (!enter_ns(p->nsfd)) {
		/* only our program: an ifindex reused meanwhile is left alone */
		int err = bpf_xdp_detach(a->ifindex, (__u32)a->mode, &o);

		if (err && err != -ENODEV && err != -EEXIST)
			logf_("pod %s: detaching from %s: %s", p->uid, a->ifname,
			      strerror(-err));
		leave_ns();
	}
	att_close(a);
}

/* Bind a unix socket at path with exactly mode: the mode is given to the
 * socket's inode before the bind and the umask is cleared for it, so the
 * file is created with it (unix_bind). Never a chmod(path) afterwards: a
 * process that can write the directory could swap in a symlink between the
 * bind and the chmod and have this daemon change the mode of any file. */
static int bind_mode(int fd, const char *path, mode_t mode)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int err = 0;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >=
	    sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (fchmod(fd, mode))
		return -errno;
	old = umask(0);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		err = -errno;
	umask(old);
	return err;
}

/* Create DIR/pods/UID/ (root's, 0755) and its xdp.sock (0666). The
 * directory is what the pod sees (mounted read-only by the webhook; a pod
 * running as uid 0 could write it otherwise), so nothing in it is reached
 * by a path that a link could redirect: the directory is opened with
 * O_NOFOLLOW and changed through that fd, the socket's name is looked at
 * and removed relative to it and bound through /proc/self/fd/N, and the
 * socket gets its mode at the bind. */
static int pod_socket(struct pod *p, char *why, size_t wl)
{
	char path[64];
	struct stat st;
	int fd, n;

	if ((size_t)snprintf(p->dir, sizeof(p->dir), "%s/pods/%s", run_dir,
			     p->uid) >= sizeof(p->dir)) {
		snprintf(why, wl, "--run-dir %.60s is too long", run_dir);
		return -ENAMETOOLONG;
	}
	if (mkdir(p->dir, 0755) && errno != EEXIST)
		goto out_err;
	p->dfd = open(p->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (p->dfd < 0) {
		n = -errno;
		snprintf(why, wl, "%.160s is not a directory (%s): remove it",
			 p->dir, strerror(-n));
		return n;
	}
	if (fchown(p->dfd, 0, 0) || fchmod(p->dfd, 0755))
		goto out_err;
	if (!fstatat(p->dfd, TS_XDPD_SOCK_NAME, &st, AT_SYMLINK_NOFOLLOW) &&
	    !S_ISSOCK(st.st_mode)) {
		snprintf(why, wl, "%.120s/%s exists and is not a socket: remove it",
			 p->dir, TS_XDPD_SOCK_NAME);
		return -EEXIST;
	}
	/* whatever the name is now: a link is removed, never followed */
	unlinkat(p->dfd, TS_XDPD_SOCK_NAME, 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", p->dfd,
		 TS_XDPD_SOCK_NAME);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto out_err;
	n = bind_mode(fd, path, 0666);
	if (n || listen(fd, TS_XDPD_POD_CLIENTS)) {
		if (!n)
			n = -errno;
		close(fd);
		snprintf(why, wl, "creating the pod socket under %.160s: %s",
			 p->dir, strerror(-n));
		return n;
	}
	p->lfd = fd;
	return 0;
out_err:
	n = -errno;
	snprintf(why, wl, "creating the pod socket under %.160s: %s", p->dir,
		 strerror(-n));
	return n;
}

static void ep_add(int fd, struct evsrc *ev)
{
	struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = ev };

	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e))
		logf_("epoll_ctl: %s", strerror(errno));
}

static void client_close(struct client *c);

/* rmdir: at detach only. On shutdown (keep) the directory stays: the
 * kubelet bind-mounted it into the pod, and a directory created anew by
 * the next daemon would not be the one the pod sees; and the programs stay
 * attached with their maps, entries and XSKs, which the next daemon takes
 * over (state_recover). */
static void pod_free(struct pod *p, int rmdir_too, int keep)
{
	char who[96];
	int i;

	if (keep) {
		struct client *c;

		/* the connections close; their entries and queues stay in
		 * the maps for the processes, which connect again */
		while ((c = p->clients)) {
			p->clients = c->next;
			if (c->fd >= 0)
				close(c->fd);
			if (c->pidfd >= 0)
				close(c->pidfd);
			free(c->ents);
			free(c);
		}
		for (i = 0; i < p->nifs; i++)
			att_close(&p->ifs[i]); /* XDP stays attached */
		p->nifs = 0;
	}
	while (p->clients)
		client_close(p->clients);
	for (i = 0; i < p->nifs; i++)
		att_detach(p, &p->ifs[i]);
	if (p->lfd >= 0) {
		close(p->lfd);
		/* kept for the next daemon (a stop, an upgrade): a process
		 * that connects meanwhile finds a socket that refuses, which
		 * the library waits for (TICKSTACK_XDPD_WAIT_MS), where a
		 * missing one fails it at once; the next daemon replaces it */
		if (!keep)
			unlinkat(p->dfd, TS_XDPD_SOCK_NAME, 0);
		if (rmdir_too && !keep)
			rmdir(p->dir);
	}
	if (p->dfd >= 0)
		close(p->dfd);
	snprintf(who, sizeof(who), "pod %s", p->uid);
	rl_flush(&p->rl, who, now_ms());
	if (p->nsfd >= 0)
		close(p->nsfd);
	free(p);
}

static int ctl_attach(const char *uid, const char *ifname, int nsfd,
		      char *why, size_t wl)
{
	uint64_t ino = 0, dev = 0;
	struct pod *p;
	struct att *a;
	int err, fresh = 0;

	if (!valid_uid(uid)) {
		snprintf(why, wl, "invalid pod uid '%s': letters, digits, '-', "
			 "'_' and '.' only, at most 71", uid);
		return -EINVAL;
	}
	if (!valid_ifname(ifname)) {
		snprintf(why, wl, "invalid interface name '%s'", ifname);
		return -EINVAL;
	}
	if (nsfd < 0) {
		snprintf(why, wl, "attach needs the pod's network namespace fd "
			 "(SCM_RIGHTS, open(CNI_NETNS))");
		return -EINVAL;
	}
	if (fd_ns_id(nsfd, &ino, &dev) || enter_ns(nsfd)) {
		snprintf(why, wl, "the fd passed is not a network namespace");
		return -EINVAL;
	}
	leave_ns();
	{
		uint64_t hino = 0, hdev = 0;

		if (!fd_ns_id(host_ns, &hino, &hdev) && hino == ino && hdev == dev) {
			snprintf(why, wl, "the namespace passed is the node's own: "
				 "pass the pod's (CNI_NETNS)");
			return -EINVAL;
		}
	}
	p = pod_by_ns(ino, dev);
	if (p && strcmp(p->uid, uid)) {
		/* DIR/node/xdp.sock tells pods apart by network namespace */
		snprintf(why, wl, "pod %s is attached in that network namespace "
			 "already: one pod per network namespace", p->uid);
		return -EEXIST;
	}
	p = pod_find(uid);
	if (p && (p->ns_ino != ino || p->ns_dev != dev)) {
		snprintf(why, wl, "pod %s is attached in another network "
			 "namespace (inode %llu): detach it first", uid,
			 (unsigned long long)p->ns_ino);
		return -EEXIST;
	}
	if (p && att_find(p, ifname, NULL))
		return 0; /* idempotent */
	if (!p) {
		p = pod_new(uid, ino, dev);
		if (!p)
			return -ENOMEM;
		p->nsfd = fcntl(nsfd, F_DUPFD_CLOEXEC, 0);
		fresh = 1;
	}
	if (p->nifs >= TS_XDPD_POD_IFS) {
		snprintf(why, wl, "pod %s has %d interfaces attached, the most "
			 "there may be", uid, TS_XDPD_POD_IFS);
		return -ENOSPC;
	}
	a = &p->ifs[p->nifs];
	memset(a, 0, sizeof(*a));
	snprintf(a->ifname, sizeof(a->ifname), "%.15s", ifname);
	err = att_attach(p, a, why, wl);
	if (err)
		goto out_err;
	p->nifs++;
	if (fresh) {
		err = pod_socket(p, why, wl);
		if (err)
			goto out_err;
		ep_add(p->lfd, &p->ev);
		p->next = pods;
		pods = p;
	}
	state_save();
	logf_("pod %s: %s attached (%s%s), netns inode %llu", uid, ifname,
	      a->mode == XDP_FLAGS_SKB_MODE ? "generic" : "native",
	      a->hw ? ", device-bound: hardware receive stamps" : "",
	      (unsigned long long)ino);
	return 0;
out_err:
	if (fresh)
		pod_free(p, 1, 0);
	return err;
}

static int ctl_detach(const char *uid, char *why, size_t wl)
{
	struct pod **pp;

	if (!valid_uid(uid)) {
		snprintf(why, wl, "invalid pod uid '%s'", uid);
		return -EINVAL;
	}
	for (pp = &pods; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->uid, uid)) {
			struct pod *p = *pp;

			*pp = p->next;
			pod_free(p, 1, 0);
			state_save();
			logf_("pod %s: detached", uid);
			return 0;
		}
	}
	return 0; /* idempotent */
}

static void ctl_status(int fd)
{
	char *buf = malloc(TS_XDPD_STATUS_MAX);
	size_t n = 0;
	struct pod *p;
	int i;

	if (!buf) {
		reply(fd, "error out of memory");
		return;
	}
	n += (size_t)snprintf(buf, TS_XDPD_STATUS_MAX, "ok");
	for (p = pods; p; p = p->next)
		for (i = 0; i < p->nifs && n < TS_XDPD_STATUS_MAX - 200; i++)
			n += (size_t)snprintf(
				buf + n, TS_XDPD_STATUS_MAX - n,
				"\n%s %s %llu %d %d", p->uid, p->ifs[i].ifname,
				(unsigned long long)p->ns_ino, p->nclients,
				map_count(p->ifs[i].steer_fd));
	msg_send(fd, buf, n, -1);
	free(buf);
}

static void ctl_request(struct ctlconn *cc)
{
	char buf[TS_XDPD_MSG_MAX], why[400] = "", a1[128], a2[128];
	int passfd, err = 0, nf;
	char extra;
	ssize_t n;

	n = msg_recv(cc->fd, buf, sizeof(buf), &passfd);
	if (n == -EAGAIN)
		return;
	if (n <= 0) {
		if (n == -EPROTO || n == -EBADMSG)
			reply(cc->fd, "error one request per message, a line of "
			      "at most %d bytes, at most one fd",
			      TS_XDPD_MSG_MAX - 1);
		epoll_ctl(epfd, EPOLL_CTL_DEL, cc->fd, NULL);
		close(cc->fd);
		free(cc);
		return;
	}
	if ((nf = sscanf(buf, "attach %127s %127s %c", a1, a2, &extra)) >= 2 &&
	    !strncmp(buf, "attach ", 7)) {
		if (nf == 3) {
			snprintf(why, sizeof(why), "usage: attach POD-UID IFNAME");
			err = -EINVAL;
		} else {
			err = ctl_attach(a1, a2, passfd, why, sizeof(why));
		}
	} else if (sscanf(buf, "detach %127s %c", a1, &extra) == 1 &&
		   !strncmp(buf, "detach ", 7)) {
		err = ctl_detach(a1, why, sizeof(why));
	} else if (!strcmp(buf, "status")) {
		ctl_status(cc->fd);
		goto out;
	} else {
		snprintf(why, sizeof(why), "unknown request '%.60s': use attach "
			 "POD-UID IFNAME (with the netns fd), detach POD-UID or "
			 "status", buf);
		err = -EINVAL;
	}
	if (err)
		reply(cc->fd, "error %s", why[0] ? why : strerror(-err));
	else
		reply(cc->fd, "ok");
out:
	if (passfd >= 0)
		close(passfd);
}

/* ---- pod clients */

/* client_link: c joins p's clients, fd (a connection, or a ghost's pidfd)
 * watched as an event of type; client_close takes it out again. */
static void client_link(struct pod *p, struct client *c, int type, int fd)
{
	c->ev.type = type;
	c->ev.p = c;
	c->next = p->clients;
	p->clients = c;
	p->nclients++;
	ep_add(fd, &c->ev);
}

static void entry_remove(struct client *c, int i)
{
	struct entry *e = &c->ents[i];
	struct att *a = &c->pod->ifs[e->att];

	if (a->obj)
		bpf_map_delete_elem(a->steer_fd,
				    &e->key);
	a->nents--;
	c->ents[i] = c->ents[--c->nents];
}

static void client_close(struct client *c)
{
	struct pod *p = c->pod;
	struct client **cp;
	int i, q, queues = 0;

	while (c->nents)
		entry_remove(c, c->nents - 1);
	for (i = 0; i < p->nifs; i++) {
		struct att *a = &p->ifs[i];

		for (q = 0; q < TS_XSKS_MAX; q++) {
			if (a->qown[q] != c)
				continue;
			a->qown[q] = NULL;
			queues++;
			if (a->obj) {
				__u32 none = 0;

				bpf_map_delete_elem(a->xsks_fd,
						    &q);
				bpf_map_update_elem(a->qown_fd,
						    &q, &none, BPF_ANY);
			}
		}
	}
	for (cp = &p->clients; *cp; cp = &(*cp)->next)
		if (*cp == c) {
			*cp = c->next;
			break;
		}
	p->nclients--;
	if (c->fd >= 0) {
		epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	} else if (c->pidfd >= 0) {
		epoll_ctl(epfd, EPOLL_CTL_DEL, c->pidfd, NULL);
	}
	if (c->pidfd >= 0)
		close(c->pidfd);
	free(c->ents);
	free(c);
	if (queues)
		state_save(); /* the queues' owners, for the next daemon */
}

/* The ghost of pid in p (a process that held entries or queues before the
 * daemon restarted), or NULL. */
static struct client *ghost_of(struct pod *p, pid_t pid)
{
	struct client *g;

	for (g = p->clients; g; g = g->next)
		if (g->fd < 0 && g->pid == pid)
			return g;
	return NULL;
}

/* c, a new connection of the process g stood for, takes over g's entries
 * and queues: the process is served as before the restart. */
static void ghost_adopt(struct client *c, struct client *g)
{
	struct pod *p = c->pod;
	int i, q, queues = 0;

	for (i = 0; i < p->nifs; i++)
		for (q = 0; q < TS_XSKS_MAX; q++)
			if (p->ifs[i].qown[q] == g) {
				p->ifs[i].qown[q] = c;
				queues++;
			}
	free(c->ents);
	c->ents = g->ents;
	c->nents = g->nents;
	c->cap = g->cap;
	g->ents = NULL;
	g->nents = 0;
	logf_("pod %s: pid %d connected again: its %d steering entries and %d "
	      "queues from before the restart are its own again", p->uid,
	      (int)c->pid, c->nents, queues);
	client_close(g); /* nothing of it is left: only its watch goes */
}

/* A connection on a pod's own socket (p) or on DIR/node/xdp.sock (p NULL,
 * lfd): there the pod is the one attached in the caller's network
 * namespace. */
static void pod_accept(struct pod *p, int lfd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct client *c;
	int fd;

	fd = accept4(p ? p->lfd : lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->pod = p;
	c->pidfd = -1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || cred.pid <= 0) {
		reply(fd, "error %d no peer credentials", EACCES);
		goto out_refuse;
	}
	c->pid = cred.pid;
	c->uid = cred.uid;
	len = sizeof(c->pidfd);
	/* the pidfd of the process that connected, from the kernel (no pid
	 * reuse race); older kernels: opened now, checked alive after use */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &c->pidfd, &len))
		c->pidfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
	if (c->pidfd < 0) {
		reply(fd, "error %d the connecting process is gone", ESRCH);
		goto out_refuse;
	}
	if (!p) {
		uint64_t ino = 0, dev = 0;

		if (client_ns(c, &ino, &dev)) {
			reply(fd, "error %d the connecting process is gone", ESRCH);
			goto out_refuse;
		}
		p = c->pod = pod_by_ns(ino, dev);
		if (!p) {
			refusal(&node_rl, "node socket",
				"refused pid %d uid %u: its network namespace "
				"(inode %llu) is no attached pod's",
				(int)cred.pid, (unsigned)cred.uid,
				(unsigned long long)ino);
			reply(fd, "error %d refused: the caller's network namespace "
			      "is no pod's that tickstack-xdpd serves (the "
			      "tickstack-xdp CNI plugin attaches a bypass pod's "
			      "interface when the pod starts)", EACCES);
			goto out_refuse;
		}
	}
	if (!client_in_pod(c)) {
		pod_refusal(p, "refused pid %d uid %u: not in the pod's network "
			    "namespace", (int)cred.pid, (unsigned)cred.uid);
		reply(fd, "error %d refused: the caller is not in pod %s's network "
		      "namespace; each pod uses only its own socket", EACCES,
		      p->uid);
		goto out_refuse;
	}
	if (p->nclients >= TS_XDPD_POD_CLIENTS && !ghost_of(p, c->pid)) {
		pod_refusal(p, "refused pid %d uid %u: the pod holds %d "
			    "connections, the limit", (int)cred.pid,
			    (unsigned)cred.uid, TS_XDPD_POD_CLIENTS);
		reply(fd, "error %d refused: pod %s holds %d connections to "
		      "tickstack-xdpd, the most a pod may (one per process: "
		      "end idle processes)", EMFILE, p->uid, TS_XDPD_POD_CLIENTS);
		goto out_refuse;
	}
	client_link(p, c, EV_CLIENT, fd);
	{
		struct client *g = ghost_of(p, c->pid);

		if (g)
			ghost_adopt(c, g);
	}
	return;
out_refuse:
	/* a request already queued would turn the close into a reset that
	 * hides the reply from the caller: read it first, but no more than a
	 * few (a caller that keeps sending gets the reset) */
	{
		char junk[TS_XDPD_MSG_MAX];
		int f, k;

		for (k = 0; k < REFUSE_DRAIN_MAX &&
			    msg_recv(fd, junk, sizeof(junk), &f) > 0; k++)
			if (f >= 0)
				close(f);
	}
	if (c->pidfd >= 0)
		close(c->pidfd);
	close(fd);
	free(c);
}

static int parse_key(const char *proto, const char *addr, const char *port,
		     struct ts_steer_key *k)
{
	char *end;
	long v;

	memset(k, 0, sizeof(*k));
	if (!strcmp(proto, "udp"))
		k->proto = TS_STEER_UDP;
	else if (!strcmp(proto, "tcp"))
		k->proto = TS_STEER_TCP;
	else
		return -EINVAL;
	if (inet_pton(AF_INET, addr, &k->daddr) != 1)
		return -EINVAL;
	errno = 0;
	v = strtol(port, &end, 10);
	if (errno || *end || v < 1 || v > 65535)
		return -EINVAL;
	k->dport = htons((uint16_t)v);
	return 0;
}

/* The proof: fd is an AF_INET socket of the key's protocol in the pod's
 * namespace, bound to the key's port and to its address or to any. */
static int check_socket(struct client *c, int fd, const struct ts_steer_key *k,
			uint64_t *ino, char *why, size_t wl)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int dom = 0, proto = 0;
	socklen_t il = sizeof(int);
	struct stat st;

	if (fd < 0) {
		snprintf(why, wl, "the request must carry the socket (SCM_RIGHTS)");
		return -EINVAL;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &il) || dom != AF_INET ||
	    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &il) ||
	    proto != (k->proto == TS_STEER_TCP ? IPPROTO_TCP : IPPROTO_UDP)) {
		snprintf(why, wl, "the fd is not an AF_INET %s socket",
			 k->proto == TS_STEER_TCP ? "TCP" : "UDP");
		return -EINVAL;
	}
	if (!sock_in_pod(fd, c->pod)) {
		snprintf(why, wl, "the socket is not in the pod's network namespace");
		return -EACCES;
	}
	if (getsockname(fd, (struct sockaddr *)&sa, &len) ||
	    sa.sin_family != AF_INET || sa.sin_port != k->dport ||
	    (sa.sin_addr.s_addr && sa.sin_addr.s_addr != k->daddr)) {
		snprintf(why, wl, "the socket is not bound to that port and "
			 "address: bind it first");
		return -EACCES;
	}
	if (fstat(fd, &st))
		return -errno;
	*ino = st.st_ino;
	return 0;
}

/* Who owns key on attachment ai: the client and its entry index. */
static struct client *key_owner(struct pod *p, int ai,
				const struct ts_steer_key *k, int *idx)
{
	struct client *o;
	int i;

	for (o = p->clients; o; o = o->next)
		for (i = 0; i < o->nents; i++)
			if (o->ents[i].att == ai &&
			    !memcmp(&o->ents[i].key, k, sizeof(*k))) {
				*idx = i;
				return o;
			}
	return NULL;
}

static int client_queue(struct client *c, struct att *a)
{
	int q;

	for (q = 0; q < TS_XSKS_MAX; q++)
		if (a->qown[q] == c)
			return q;
	return -1;
}

/* Queue qs of a for c: its number, or a negative errno with why set. One
 * XSK per queue; a connection may hold several queues of an interface (a
 * process serves every queue: docs/dataplane-design.md "Every queue
 * served"). */
static int queue_for(struct client *c, struct att *a, const char *qs,
		     char *why, size_t wl)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(qs, &end, 10);
	if (errno || *end || v < 0 || v >= TS_XSKS_MAX) {
		snprintf(why, wl, "queue '%s' out of range [0, %d)", qs, TS_XSKS_MAX);
		return -EINVAL;
	}
	if (a->qown[v] && a->qown[v] != c) {
		snprintf(why, wl, "queue %ld of %s is used by another process of "
			 "the pod (pid %d): one XSK per queue", v, a->ifname,
			 (int)a->qown[v]->pid);
		return -EBUSY;
	}
	return (int)v;
}

/* Put the XSK fd in a's XSKMAP slot q, for c. */
static int xskmap_set(struct client *c, struct att *a, int q, int fd,
		      char *why, size_t wl)
{
	__u32 pid;

	if (bpf_map_update_elem(a->xsks_fd, &q, &fd, 0)) {
		int err = -errno;

		snprintf(why, wl, "XSKMAP update: %s", strerror(errno));
		return err;
	}
	/* the steering program redirects c's flows that land on q here */
	pid = (__u32)c->pid;
	bpf_map_update_elem(a->qown_fd, &q, &pid, BPF_ANY);
	a->qown[q] = c;
	return 0;
}

static int req_xsk(struct client *c, struct att *a, const char *qs, int fd,
		   int sg, char *why, size_t wl)
{
	socklen_t il = sizeof(int);
	int dom = 0, q, err;

	q = queue_for(c, a, qs, why, wl);
	if (q < 0)
		return q;
	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &il) ||
	    dom != AF_XDP) {
		snprintf(why, wl, "the request must carry an AF_XDP socket");
		return -EINVAL;
	}
	if (!sock_in_pod(fd, c->pod)) {
		snprintf(why, wl, "the XSK is not in the pod's network namespace");
		return -EACCES;
	}
	err = xskmap_set(c, a, q, fd, why, wl);
	if (!err) {
		a->qbytes[q] = 0; /* the process's own UMEM, charged to it */
		/* the process bound it: its word (a wrong one loses only the
		 * jumbo frames of its own ports, which its XSK then drops) */
		a->qsg[q] = (uint8_t)sg;
		state_save(); /* the queue's owner, for the next daemon */
	}
	return err;
}

/* UMEM bytes the daemon registered for a pod's live XSKMAP slots. */
static uint64_t pod_umem_bytes(const struct pod *p)
{
	uint64_t n = 0;
	int i, q;

	for (i = 0; i < p->nifs; i++)
		for (q = 0; q < TS_XSKS_MAX; q++)
			if (p->ifs[i].qown[q])
				n += p->ifs[i].qbytes[q];
	return n;
}

/* A power of two in [lo, hi], or -1. */
static long pow2_in(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi || (v & (v - 1)))
		return -1;
	return v;
}

/* Whether every page of the mapping is resident: the pod wrote its UMEM
 * before passing it, so its pages are charged to the pod's memory cgroup,
 * not to the daemon that pins them. */
static int all_resident(void *addr, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = (len + pg - 1) / pg, i;
	unsigned char *vec = malloc(n);
	int ok = 0;

	if (!vec)
		return 0;
	if (!mincore(addr, len, vec)) {
		for (i = 0; i < n && (vec[i] & 1); i++)
			;
		ok = i == n;
	}
	free(vec);
	return ok;
}

#define TS_XDP_USE_SG (1u << 4) /* Linux 6.6; not in bookworm's if_xdp.h */

/* Whether frames of a's MTU are longer than one UMEM frame of frame bytes
 * takes (the kernel keeps 256 of them), read in the pod's namespace. */
static int needs_sg(const struct att *a, unsigned frame)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;

	if (s < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", a->ifname);
	if (!ioctl(s, SIOCGIFMTU, &ifr))
		r = (unsigned)ifr.ifr_mtu + 14 > frame - 256;
	close(s);
	return r;
}

/* The AF_XDP socket for "umem": created in the pod's network namespace,
 * its UMEM registered from the daemon's mapping of memfd (with TX metadata
 * room when txmd and the kernel has it; *txmd says whether it took), its
 * rings sized, bound to queue q of a (with XDP_USE_SG when the MTU needs
 * chains of frames and the kernel takes it: *sg says). The fd, or a
 * negative errno. */
static int xsk_make(struct pod *p, struct att *a, int q, int memfd, size_t size,
		    unsigned frame, unsigned ring, int *txmd, int *sg, char *why,
		    size_t wl)
{
	struct sockaddr_xdp sx = { .sxdp_family = AF_XDP,
				   .sxdp_flags = XDP_USE_NEED_WAKEUP,
				   .sxdp_ifindex = (uint32_t)a->ifindex,
				   .sxdp_queue_id = (uint32_t)q };
	struct { /* struct xdp_umem_reg as Linux 6.8 has it */
		uint64_t addr, len;
		uint32_t chunk_size, headroom, flags, tx_metadata_len;
	} mr = { .len = size, .chunk_size = frame };
	static const int rings[] = { XDP_UMEM_FILL_RING, XDP_UMEM_COMPLETION_RING,
				     XDP_RX_RING, XDP_TX_RING };
	void *area;
	int fd, err, i;

	area = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (area == MAP_FAILED) {
		err = -errno;
		snprintf(why, wl, "cannot map the UMEM memfd: %s", strerror(errno));
		return err;
	}
	if (!all_resident(area, size)) {
		snprintf(why, wl, "the UMEM memfd has pages not written yet: "
			 "write every page before passing it (its memory is the "
			 "pod's)");
		err = -EFAULT;
		goto out_unmap;
	}
	err = enter_ns(p->nsfd);
	if (err) {
		snprintf(why, wl, "cannot enter the pod's network namespace: %s",
			 strerror(-err));
		goto out_unmap;
	}
	fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	err = fd < 0 ? -errno : 0;
	*sg = needs_sg(a, frame);
	leave_ns();
	if (fd < 0) {
		snprintf(why, wl, "AF_XDP socket: %s", strerror(-err));
		goto out_unmap;
	}
	/* the pages are pinned by the registration: the daemon (with
	 * CAP_IPC_LOCK) is not charged RLIMIT_MEMLOCK, pod_umem_bytes bounds
	 * what a pod can pin */
	mr.addr = (uint64_t)(uintptr_t)area;
	mr.tx_metadata_len = (uint32_t)*txmd;
	mr.flags = *txmd ? 1u << 2 : 0; /* XDP_UMEM_TX_METADATA_LEN */
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr))) {
		/* a kernel before 6.8 knows neither the flag nor the field */
		mr.flags = 0;
		mr.tx_metadata_len = 0;
		*txmd = 0;
		if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr))) {
			err = -errno;
			snprintf(why, wl, "UMEM registration: %s", strerror(errno));
			goto out_close;
		}
	}
	for (i = 0; i < 4; i++)
		if (setsockopt(fd, SOL_XDP, rings[i], &ring, sizeof(ring))) {
			err = -errno;
			snprintf(why, wl, "ring sizes: %s", strerror(errno));
			goto out_close;
		}
	if (*sg) {
		sx.sxdp_flags |= TS_XDP_USE_SG;
		if (!bind(fd, (struct sockaddr *)&sx, sizeof(sx)))
			goto bound;
		/* no multi-buffer here: jumbo frames stay on the kernel */
		*sg = 0;
		sx.sxdp_flags &= ~TS_XDP_USE_SG;
		if (errno != EINVAL && errno != EOPNOTSUPP)
			goto bind_failed;
	}
	if (bind(fd, (struct sockaddr *)&sx, sizeof(sx))) {
bind_failed:
		err = -errno;
		snprintf(why, wl, "binding to queue %d of %s: %s", q, a->ifname,
			 strerror(errno));
		goto out_close;
	}
bound:
	munmap(area, size); /* the registration holds the pages */
	return fd;
out_close:
	close(fd);
out_unmap:
	munmap(area, size);
	return err;
}

/* "umem IFNAME QUEUE FRAME RING" with the UMEM's memfd: the daemon makes
 * the XSK (the pod holds no capability), puts it in the XSKMAP and *xsk
 * gets its fd, to pass back and close. */
static int req_umem(struct client *c, struct att *a, const char *qs,
		    const char *fs, const char *rs, int memfd, int *xsk,
		    int *txmd, int *sg, char *why, size_t wl)
{
	long frame = pow2_in(fs, 2048, 4096), ring = pow2_in(rs, 64, TS_XDPD_RING_MAX);
	struct stat st;
	int q, fd, err;
	uint64_t held;

	q = queue_for(c, a, qs, why, wl);
	if (q < 0)
		return q;
	if (frame < 0 || ring < 0) {
		snprintf(why, wl, "frame size '%.16s' must be 2048 or 4096, ring "
			 "size '%.16s' a power of two in [64, %d]", fs, rs,
			 TS_XDPD_RING_MAX);
		return -EINVAL;
	}
	if (memfd < 0 || fcntl(memfd, F_GET_SEALS) < 0 || fstat(memfd, &st) ||
	    !S_ISREG(st.st_mode)) {
		snprintf(why, wl, "the request must carry the UMEM as a memfd "
			 "(memfd_create)");
		return -EINVAL;
	}
	if (st.st_size <= 0 || st.st_size % frame ||
	    (uint64_t)st.st_size > TS_XDPD_UMEM_MAX) {
		snprintf(why, wl, "the UMEM memfd holds %lld bytes: a multiple of "
			 "the frame size (%ld), at most %llu", (long long)st.st_size,
			 frame, (unsigned long long)TS_XDPD_UMEM_MAX);
		return -EINVAL;
	}
	held = pod_umem_bytes(c->pod) - (a->qown[q] == c ? a->qbytes[q] : 0);
	if (held + (uint64_t)st.st_size > TS_XDPD_POD_UMEM) {
		snprintf(why, wl, "pod %s's XSKs hold %llu bytes of UMEM, the "
			 "daemon registers at most %llu per pod",
			 c->pod->uid, (unsigned long long)held,
			 (unsigned long long)TS_XDPD_POD_UMEM);
		return -ENOSPC;
	}
	fd = xsk_make(c->pod, a, q, memfd, (size_t)st.st_size, (unsigned)frame,
		      (unsigned)ring, txmd, sg, why, wl);
	if (fd < 0)
		return fd;
	err = xskmap_set(c, a, q, fd, why, wl);
	if (err) {
		close(fd);
		return err;
	}
	a->qbytes[q] = (uint64_t)st.st_size;
	a->qsg[q] = (uint8_t)*sg;
	state_save(); /* the queue's owner and its UMEM, for the next daemon */
	*xsk = fd;
	return 0;
}

/* Room for one more entry of c: 0, or -ENOMEM. The array grows as the
 * connection adds entries (at most TS_XDPD_CLIENT_ENTRIES). */
static int client_grow(struct client *c)
{
	struct entry *n;
	int cap;

	if (c->nents < c->cap)
		return 0;
	cap = c->cap ? 2 * c->cap : 16;
	if (cap > TS_XDPD_CLIENT_ENTRIES)
		cap = TS_XDPD_CLIENT_ENTRIES;
	n = realloc(c->ents, (size_t)cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->ents = n;
	c->cap = cap;
	return 0;
}

/* Steer k on attachment ai to the caller's XSK. Nothing changes unless the
 * whole request succeeds: the limits are checked, and the map updated,
 * before any owner's list is touched. */
static int req_add(struct client *c, int ai, const struct ts_steer_key *k,
		   int fd, char *why, size_t wl)
{
	struct att *a = &c->pod->ifs[ai];
	int mfd = a->steer_fd;
	struct ts_steer_val v = { .owner = (__u32)c->pid };
	struct client *o;
	uint64_t ino;
	int q, err, oi;

	err = check_socket(c, fd, k, &ino, why, wl);
	if (err)
		return err;
	q = client_queue(c, a);
	if (q < 0) {
		snprintf(why, wl, "register an XSK on %s first", a->ifname);
		return -ENOENT;
	}
	v.queue = (__u16)q;
	v.flags = a->qsg[q] ? TS_STEER_F_SG : 0;
	o = key_owner(c->pod, ai, k, &oi);
	if (o && o != c && o->ents[oi].ino != ino) {
		struct ts_steer_val old;

		if (k->proto == TS_STEER_UDP && !bpf_map_lookup_elem(mfd, k, &old)) {
			/* both receive: the kernel delivers */
			old.flags |= TS_STEER_F_SHARED;
			bpf_map_update_elem(mfd, k, &old, BPF_EXIST);
		}
		snprintf(why, wl, "another process of the pod steers that port");
		return -EADDRINUSE;
	}
	/* o == c: the caller's own entry, renewed; o another connection:
	 * the very same socket (inherited over fork) moves to the caller's
	 * XSK, as in the standalone library; no o: a new entry */
	if (o != c) {
		if (c->nents >= TS_XDPD_CLIENT_ENTRIES) {
			pod_refusal(c->pod, "pid %d: refused a steering entry: the "
				    "connection holds %d, the limit", (int)c->pid,
				    TS_XDPD_CLIENT_ENTRIES);
			snprintf(why, wl, "this connection holds %d steering "
				 "entries, the most one connection may; delete "
				 "unused ones", TS_XDPD_CLIENT_ENTRIES);
			return -ENOSPC;
		}
		if (!o && a->nents >= TS_XDPD_IF_ENTRIES) {
			pod_refusal(c->pod, "pid %d: refused a steering entry: "
				    "%s holds %d, the limit", (int)c->pid,
				    a->ifname, TS_XDPD_IF_ENTRIES);
			snprintf(why, wl, "pod %s holds %d steering entries on "
				 "%s, the most a pod interface may (its steering "
				 "map's size); delete unused ones", c->pod->uid,
				 TS_XDPD_IF_ENTRIES, a->ifname);
			return -ENOSPC;
		}
		if (client_grow(c)) {
			snprintf(why, wl, "out of memory");
			return -ENOMEM;
		}
	}
	if (bpf_map_update_elem(mfd, k, &v, BPF_ANY)) {
		err = -errno;
		snprintf(why, wl, "steering map update: %s", strerror(errno));
		return err;
	}
	if (o == c) {
		c->ents[oi].ino = ino;
		return 0;
	}
	if (o)
		o->ents[oi] = o->ents[--o->nents];
	else
		a->nents++;
	c->ents[c->nents].att = ai;
	c->ents[c->nents].key = *k;
	c->ents[c->nents].ino = ino;
	c->nents++;
	return 0;
}

/* Set TS_STEER_F_SHARED on key; 1 when it changed. */
static int mark_shared(struct att *a, const struct ts_steer_key *k)
{
	int mfd = a->steer_fd;
	struct ts_steer_val v;

	if (bpf_map_lookup_elem(mfd, k, &v) || (v.flags & TS_STEER_F_SHARED))
		return 0;
	v.flags |= TS_STEER_F_SHARED;
	return !bpf_map_update_elem(mfd, k, &v, BPF_EXIST);
}

static void client_request(struct client *c)
{
	char buf[TS_XDPD_MSG_MAX], why[400] = "";
	char op[16], ifn[32], f3[32], f4[32], f5[32], extra;
	struct ts_steer_key k;
	struct att *a = NULL;
	int passfd, nf, err = 0, ai = -1, oi;
	struct client *o;
	ssize_t n;

	n = msg_recv(c->fd, buf, sizeof(buf), &passfd);
	if (n == -EAGAIN)
		return;
	if (n == -EPROTO || n == -EBADMSG) {
		pod_refusal(c->pod, "pid %d: refused a malformed message (%s)",
			    (int)c->pid, n == -EPROTO ? "too long, or more than "
			    "one fd" : "a NUL byte");
		if (n == -EPROTO)
			reply(c->fd, "error %d a request is one message of at most "
			      "%d bytes with at most one fd (SCM_RIGHTS)", EPROTO,
			      TS_XDPD_MSG_MAX - 1);
		else
			reply(c->fd, "error %d a request is one line of text, "
			      "without NUL bytes", EBADMSG);
		return;
	}
	if (n <= 0) {
		client_close(c); /* EOF: the process is gone */
		return;
	}
	if (!client_in_pod(c)) {
		reply(c->fd, "error %d refused: the caller left the pod's network "
		      "namespace", EACCES);
		goto out;
	}
	nf = sscanf(buf, "%15s %31s %31s %31s %31s %c", op, ifn, f3, f4, f5,
		    &extra);
	if (nf == 1 && !strcmp(op, "hello")) {
		char out[TS_XDPD_MSG_MAX];
		size_t m = (size_t)snprintf(out, sizeof(out), "ok");
		int i;

		for (i = 0; i < c->pod->nifs; i++)
			m += (size_t)snprintf(out + m, sizeof(out) - m, " %s",
					      c->pod->ifs[i].ifname);
		msg_send(c->fd, out, m, -1);
		goto out;
	}
	if (nf >= 2) {
		a = att_find(c->pod, ifn, &ai);
		if (!a) {
			snprintf(why, sizeof(why), "interface '%.31s' is not "
				 "attached for this pod", ifn);
			err = -ENODEV;
			goto done;
		}
	}
	if (nf == 3 && !strcmp(op, "busy")) {
		/* whether a live process of the pod holds the queue */
		long q = strtol(f3, NULL, 10);

		reply(c->fd, "ok %d", q >= 0 && q < TS_XSKS_MAX && a->qown[q] &&
				      a->qown[q] != c);
		goto out;
	}
	if (nf == 5 && !strcmp(op, "umem")) {
		int xsk = -1, txmd = (int)TS_XDPD_TXMD_LEN, sg = 0;

		err = req_umem(c, a, f3, f4, f5, passfd, &xsk, &txmd, &sg, why,
			       sizeof(why));
		if (!err) {
			char out[40];
			int m = snprintf(out, sizeof(out), "ok %s %d%s%s",
					 a->mode == XDP_FLAGS_SKB_MODE ? "skb" :
					 "native", txmd ? (int)TS_XDPD_TXMD_LEN : 0,
					 sg ? " sg" : "", a->hw ? " hwts" : "");

			/* the process holds the XSK from here: the daemon's
			 * copy goes, so the process's exit frees it */
			msg_send(c->fd, out, (size_t)m, xsk);
			close(xsk);
			goto out;
		}
		goto done;
	}
	if ((nf == 3 || (nf == 4 && !strcmp(f4, "sg"))) && !strcmp(op, "xsk")) {
		err = req_xsk(c, a, f3, passfd, nf == 4, why, sizeof(why));
		if (!err) {
			reply(c->fd, "ok %s%s", a->mode == XDP_FLAGS_SKB_MODE ?
				      "skb" : "native", a->hw ? " hwts" : "");
			goto out;
		}
		goto done;
	}
	if (nf != 5 || parse_key(f3, f4, f5, &k)) {
		snprintf(why, sizeof(why), "bad request '%.80s' (src/xdpd_proto.h)",
			 buf);
		err = -EINVAL;
		goto done;
	}
	if (!strcmp(op, "add")) {
		err = req_add(c, ai, &k, passfd, why, sizeof(why));
	} else if (!strcmp(op, "share")) {
		uint64_t ino;

		err = check_socket(c, passfd, &k, &ino, why, sizeof(why));
		if (!err) {
			o = key_owner(c->pod, ai, &k, &oi);
			reply(c->fd, "ok %d", o && o != c ? mark_shared(a, &k) : 0);
			goto out;
		}
	} else if (!strcmp(op, "shared") || !strcmp(op, "del")) {
		o = key_owner(c->pod, ai, &k, &oi);
		if (o != c) {
			snprintf(why, sizeof(why), "no such entry of this process");
			err = o ? -EPERM : -ENOENT;
		} else if (op[0] == 's') {
			reply(c->fd, "ok %d", mark_shared(a, &k));
			goto out;
		} else {
			entry_remove(c, oi);
		}
	} else {
		snprintf(why, sizeof(why), "unknown request '%.15s'", op);
		err = -EINVAL;
	}
done:
	if (err)
		reply(c->fd, "error %d %s", -err, why[0] ? why : strerror(-err));
	else
		reply(c->fd, "ok");
out:
	if (passfd >= 0)
		close(passfd);
}

/* ---- state across restarts
 *
 * DIR/state (root's, 0600, replaced atomically: written to DIR/state.tmp,
 * synced, renamed) names what the daemon attached, for the next daemon:
 *   tickstack-xdpd-state 1
 *   att UID IFNAME IFINDEX NETNS-INODE NETNS-DEV PROG-ID MODE
 *   q UID IFNAME QUEUE PID UMEM-BYTES SG
 * ("q": a queue's XSK, the process that holds it and the UMEM the daemon
 * registered for it). Written at every attach, detach and change of a
 * queue's owner. A daemon that starts (after SIGKILL, a crash, an upgrade)
 * takes each attachment over when it still holds: the network namespace
 * (found by its inode in /run/netns or a process's /proc/PID/ns/net: the
 * daemon runs in the node's PID namespace), the interface at that index,
 * a steering program on it. It loads its own program over the same maps
 * (reacquired by id: CAP_SYS_ADMIN) and swaps it in atomically
 * (XDP_FLAGS_REPLACE), so no packet misses the steering. The maps' entries
 * and queues belong to ghosts (struct client) of the processes that made
 * them: a process that connects again gets them back, one that exited
 * takes them with it. A record that no longer holds is dropped with a log
 * line; a file that cannot be read is ignored with one. */
#define STATE_MAGIC "tickstack-xdpd-state 1"

static int state_on; /* serve() keeps the file (not the fuzzer's daemon) */

/* A line read from the file, cut at its newline, as a log may show it. */
static void printable(char *s)
{
	s[strcspn(s, "\n")] = 0;
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || (unsigned char)*s > '~')
			*s = '?';
}

static void state_save(void)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	struct pod *p;
	FILE *f;
	int fd, i, q, err = 0;

	if (!state_on)
		return;
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", run_dir, STATE_NAME);
	snprintf(path, sizeof(path), "%s/%s", run_dir, STATE_NAME);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		logf_("state file %s: %s: a restart of the daemon will not serve "
		      "the pods again until the CNI plugin attaches them", tmp,
		      strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	fprintf(f, "%s\n", STATE_MAGIC);
	for (p = pods; p; p = p->next)
		for (i = 0; i < p->nifs; i++) {
			struct att *a = &p->ifs[i];

			fprintf(f, "att %s %s %d %llu %llu %u %d\n", p->uid,
				a->ifname, a->ifindex,
				(unsigned long long)p->ns_ino,
				(unsigned long long)p->ns_dev, a->prog_id, a->mode);
			for (q = 0; q < TS_XSKS_MAX; q++)
				if (a->qown[q])
					fprintf(f, "q %s %s %d %d %llu %d\n", p->uid,
						a->ifname, q, (int)a->qown[q]->pid,
						(unsigned long long)a->qbytes[q],
						a->qsg[q]);
		}
	if (fflush(f) || fsync(fd))
		err = errno;
	if (fclose(f) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err) {
		logf_("state file %s: %s: a restart of the daemon will not serve "
		      "the pods again until the CNI plugin attaches them", path,
		      strerror(err));
		unlink(tmp);
	}
}

/* A network namespace fd for (ino, dev): a name in /run/netns, else a
 * process's /proc/PID/ns/net (the pod's pause process holds it), or -1. */
static int ns_find(uint64_t ino, uint64_t dev)
{
	static const char *const dirs[2] = { "/run/netns", "/proc" };
	char path[PATH_MAX];
	struct dirent *e;
	struct stat st;
	int i, fd = -1;

	for (i = 0; i < 2 && fd < 0; i++) {
		DIR *d = opendir(dirs[i]);

		if (!d)
			continue;
		while (fd < 0 && (e = readdir(d))) {
			if (e->d_name[0] == '.' ||
			    (i == 1 && (e->d_name[0] < '1' || e->d_name[0] > '9')))
				continue;
			snprintf(path, sizeof(path), i ? "%s/%s/ns/net" : "%s/%s",
				 dirs[i], e->d_name);
			if (stat(path, &st) || st.st_ino != ino ||
			    (uint64_t)st.st_dev != dev)
				continue;
			fd = open(path, O_RDONLY | O_CLOEXEC);
		}
		closedir(d);
	}
	return fd;
}

/* The ghost of pid in p, made when none is yet: NULL when the process is
 * gone or no longer in the pod's namespace (its pid reused elsewhere). */
static struct client *ghost_get(struct pod *p, pid_t pid)
{
	struct client *g = ghost_of(p, pid);

	if (g || pid <= 0)
		return g;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->fd = -1;
	g->pod = p;
	g->pid = pid;
	g->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (g->pidfd < 0 || !client_in_pod(g)) {
		if (g->pidfd >= 0)
			close(g->pidfd);
		free(g);
		return NULL;
	}
	client_link(p, g, EV_GHOST, g->pidfd); /* readable when it exits */
	return g;
}

/* The maps of the program attached as a (prog_id, in the pod's namespace)
 * reused by a program of our own swapped in for it. 0, or a negative
 * errno with why set. */
static int att_takeover(struct att *a, char *why, size_t wl)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, xq);
	LIBBPF_OPTS(bpf_xdp_attach_opts, o);
	struct bpf_prog_info info;
	__u32 len = sizeof(info), ids[8], n, i;
	int pfd, err, hw = 0, reused = 0;

	if ((int)if_nametoindex(a->ifname) != a->ifindex) {
		snprintf(why, wl, "interface %s (index %d) is gone", a->ifname,
			 a->ifindex);
		return -ENODEV;
	}
	if (bpf_xdp_query(a->ifindex, 0, &xq) || !xq.prog_id) {
		snprintf(why, wl, "no XDP program is attached to %s any more",
			 a->ifname);
		return -ENOENT;
	}
	a->mode = xq.attach_mode == XDP_ATTACHED_SKB ? XDP_FLAGS_SKB_MODE :
						       XDP_FLAGS_DRV_MODE;
	pfd = bpf_prog_get_fd_by_id(xq.prog_id);
	if (pfd < 0) {
		snprintf(why, wl, "program %u: %s (the daemon needs "
			 "CAP_SYS_ADMIN)", xq.prog_id, strerror(errno));
		return -errno;
	}
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = 8;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(pfd, &info, &len) ||
	    !steer_name(info.name, &hw)) {
		snprintf(why, wl, "the program on %s (id %u) is not a steering "
			 "program: left alone", a->ifname, xq.prog_id);
		err = -EEXIST;
		goto out;
	}
	/* the same kind as the one attached: a device-bound one stays so */
	err = att_open(a, hw);
	if (err) {
		snprintf(why, wl, "opening the steering program: %s",
			 strerror(-err));
		att_close(a);
		goto out;
	}
	n = info.nr_map_ids < 8 ? info.nr_map_ids : 8;
	for (i = 0; i < n; i++) {
		struct bpf_map_info mi;
		__u32 ml = sizeof(mi);
		struct bpf_map *m;
		int mfd = bpf_map_get_fd_by_id(ids[i]);

		if (mfd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &ml) &&
		    (m = bpf_object__find_map_by_name(a->obj, mi.name)) &&
		    !bpf_map__reuse_fd(m, mfd))
			reused++;
		close(mfd); /* reuse_fd holds its own copy */
	}
	if (reused < 4) {
		snprintf(why, wl, "the program on %s (id %u) has %d of the 4 "
			 "steering maps", a->ifname, xq.prog_id, reused);
		err = -ENOENT;
		goto out_skel;
	}
	err = att_load(a);
	if (err) {
		snprintf(why, wl, "the maps of program %u do not fit this "
			 "daemon's program (%s): it stays attached, the pod's "
			 "sockets keep their steering; attach the pod again (its "
			 "new sockets need it)", xq.prog_id, strerror(-err));
		goto out_skel;
	}
	/* exactly that program is replaced: nothing else in between */
	o.old_prog_fd = pfd;
	err = bpf_xdp_attach(a->ifindex, a->prog_fd,
			     (__u32)a->mode | XDP_FLAGS_REPLACE, &o);
	if (err) {
		snprintf(why, wl, "replacing program %u on %s: %s", xq.prog_id,
			 a->ifname, strerror(-err));
		goto out_skel;
	}
	a->prog_id = prog_id_of(a->prog_fd);
	goto out;
out_skel:
	att_close(a);
out:
	close(pfd);
	return err;
}

/* The processes behind a's queues and entries (read from its maps) as
 * ghosts; what a process that is gone left is deleted. */
static void att_ghosts(struct pod *p, int ai)
{
	struct att *a = &p->ifs[ai];
	int qfd = a->qown_fd;
	int xfd = a->xsks_fd;
	int mfd = a->steer_fd;
	struct ts_steer_key *keys, *prev = NULL;
	struct ts_steer_val v;
	__u32 pid, none = 0;
	int q, gone = 0, n = 0, i;

	for (q = 0; q < TS_XSKS_MAX; q++) {
		struct client *g;

		if (bpf_map_lookup_elem(qfd, &q, &pid) || !pid)
			continue;
		g = ghost_get(p, (pid_t)pid);
		if (g) {
			a->qown[q] = g;
			continue;
		}
		bpf_map_delete_elem(xfd, &q);
		bpf_map_update_elem(qfd, &q, &none, BPF_ANY);
	}
	/* the keys first: deleting while walking would restart the walk */
	keys = calloc(TS_STEER_MAX_ENTRIES, sizeof(*keys));
	if (!keys)
		return;
	while (n < TS_STEER_MAX_ENTRIES &&
	       !bpf_map_get_next_key(mfd, prev, &keys[n])) {
		prev = &keys[n];
		n++;
	}
	for (i = 0; i < n; i++) {
		struct client *g;

		if (bpf_map_lookup_elem(mfd, &keys[i], &v))
			continue;
		g = ghost_get(p, (pid_t)v.owner);
		if (g && g->nents < TS_XDPD_CLIENT_ENTRIES && !client_grow(g)) {
			g->ents[g->nents].att = ai;
			g->ents[g->nents].key = keys[i];
			g->ents[g->nents].ino = 0;
			g->nents++;
			a->nents++;
			continue;
		}
		bpf_map_delete_elem(mfd, &keys[i]);
		gone++;
	}
	free(keys);
	if (gone)
		logf_("pod %s: %s: %d steering entries of processes that exited "
		      "while no daemon ran removed", p->uid, a->ifname, gone);
}

/* The pod directory of a pod that is gone. */
static void pod_dir_remove(const char *uid)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/pods/%s/%s", run_dir, uid,
		 TS_XDPD_SOCK_NAME);
	unlink(path);
	snprintf(path, sizeof(path), "%s/pods/%s", run_dir, uid);
	rmdir(path);
}

struct qrec {                    /* a "q" line, applied once att lines are */
	char uid[72], ifname[IF_NAMESIZE];
	int q, pid, sg;
	unsigned long long bytes;
};

/* One "att" record: its pod (made on its first record) takes the
 * attachment over, or the record is dropped with a log line. */
static void state_att(const char *uid, const char *ifname, int ifindex,
		      uint64_t ino, uint64_t dev, unsigned prog_id, int lineno)
{
	char why[400] = "";
	struct pod *p = pod_find(uid), *o = pod_by_ns(ino, dev);
	struct att *a;
	int err, nsfd;

	if (o && o != p) {
		logf_("state: pod %s: its network namespace is pod %s's: record "
		      "(line %d) dropped", uid, o->uid, lineno);
		return;
	}
	if (p && (att_find(p, ifname, NULL) || p->nifs >= TS_XDPD_POD_IFS ||
		  p->ns_ino != ino || p->ns_dev != dev)) {
		logf_("state: pod %s %s: a second record (line %d) dropped", uid,
		      ifname, lineno);
		return;
	}
	if (!p) {
		nsfd = ns_find(ino, dev);
		if (nsfd < 0) {
			logf_("state: pod %s: its network namespace (inode %llu) "
			      "is gone: the pod is, its record dropped", uid,
			      (unsigned long long)ino);
			pod_dir_remove(uid);
			return;
		}
		p = pod_new(uid, ino, dev);
		if (!p) {
			close(nsfd);
			return;
		}
		p->nsfd = nsfd;
		err = pod_socket(p, why, sizeof(why));
		if (err) {
			logf_("state: pod %s: %s: its record dropped", uid, why);
			pod_free(p, 0, 0);
			return;
		}
		ep_add(p->lfd, &p->ev);
		p->next = pods;
		pods = p;
	}
	a = &p->ifs[p->nifs];
	memset(a, 0, sizeof(*a));
	snprintf(a->ifname, sizeof(a->ifname), "%.15s", ifname);
	a->ifindex = ifindex;
	err = enter_ns(p->nsfd);
	if (!err) {
		err = att_takeover(a, why, sizeof(why));
		leave_ns();
	} else {
		snprintf(why, sizeof(why), "cannot enter its network namespace: %s",
			 strerror(-err));
	}
	if (err) {
		logf_("state: pod %s %s: %s: its record dropped", uid, ifname, why);
		return;
	}
	p->nifs++;
	att_ghosts(p, p->nifs - 1);
	logf_("pod %s: %s taken over from the previous daemon (program %u, "
	      "now %u; %d steering entries), netns inode %llu", uid, ifname,
	      prog_id, a->prog_id, a->nents, (unsigned long long)ino);
}

/* Serve again what the previous daemon attached (DIR/state). Never fails:
 * what cannot be taken over is logged and left to the CNI plugin. */
static void state_recover(void)
{
	char path[PATH_MAX], line[512];
	struct qrec *qs = NULL;
	int nq = 0, lineno = 0, fd, i;
	struct pod *p, **pp;
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", run_dir, STATE_NAME);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			logf_("state file %s: %s: ignored; pods attached before "
			      "are served again when the CNI plugin attaches "
			      "them", path, strerror(errno));
		return;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    !(f = fdopen(fd, "r"))) {
		logf_("state file %s: not a regular file of root's: ignored; pods "
		      "attached before are served again when the CNI plugin "
		      "attaches them", path);
		close(fd);
		return;
	}
	line[0] = 0; /* an empty file leaves it so */
	if (!fgets(line, sizeof(line), f) || strncmp(line, STATE_MAGIC "\n",
						     sizeof(STATE_MAGIC))) {
		printable(line);
		logf_("state file %s: first line '%.40s' is not '%s': the file is "
		      "ignored; pods attached before are served again when the "
		      "CNI plugin attaches them", path, line, STATE_MAGIC);
		fclose(f);
		return;
	}
	lineno = 1;
	while (fgets(line, sizeof(line), f)) {
		char uid[128], ifn[128], extra;
		unsigned long long ino, dev, bytes;
		unsigned prog;
		int ifindex, mode, q, pid, sg;

		lineno++;
		printable(line);
		if (sscanf(line, "att %127s %127s %d %llu %llu %u %d %c", uid, ifn,
			   &ifindex, &ino, &dev, &prog, &mode, &extra) == 7 &&
		    valid_uid(uid) && valid_ifname(ifn) && ifindex > 0) {
			state_att(uid, ifn, ifindex, ino, dev, prog, lineno);
			continue;
		}
		if (sscanf(line, "q %127s %127s %d %d %llu %d %c", uid, ifn, &q,
			   &pid, &bytes, &sg, &extra) == 6 && valid_uid(uid) &&
		    valid_ifname(ifn) && q >= 0 && q < TS_XSKS_MAX && pid > 0 &&
		    bytes <= TS_XDPD_UMEM_MAX && (sg == 0 || sg == 1)) {
			struct qrec *n = realloc(qs, (size_t)(nq + 1) * sizeof(*qs));

			if (!n)
				break;
			qs = n;
			snprintf(qs[nq].uid, sizeof(qs[nq].uid), "%.71s", uid);
			snprintf(qs[nq].ifname, sizeof(qs[nq].ifname), "%.15s", ifn);
			qs[nq].q = q;
			qs[nq].pid = pid;
			qs[nq].bytes = bytes;
			qs[nq].sg = sg;
			nq++;
			continue;
		}
		logf_("state file %s line %d: cannot parse '%.60s': ignored", path,
		      lineno, line);
	}
	fclose(f);
	/* a queue's UMEM and SG, where the process that holds it is the one
	 * the record names */
	for (i = 0; i < nq; i++) {
		struct att *a;

		p = pod_find(qs[i].uid);
		a = p ? att_find(p, qs[i].ifname, NULL) : NULL;
		if (a && a->qown[qs[i].q] && a->qown[qs[i].q]->pid == qs[i].pid) {
			a->qbytes[qs[i].q] = qs[i].bytes;
			a->qsg[qs[i].q] = (uint8_t)qs[i].sg;
		}
	}
	free(qs);
	/* a pod whose every record was dropped */
	for (pp = &pods; (p = *pp);) {
		if (p->nifs) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		pod_free(p, 0, 0);
	}
	state_save();
}

/* ---- serving */

/* path as a directory of root's with mode, changed through an fd opened
 * without following a link. */
static int mkdir_root(const char *path, mode_t mode)
{
	struct stat st;
	int fd, err = 0;

	if (mkdir(path, mode) && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -ENOTDIR;
	if (fstat(fd, &st) || st.st_uid != 0)
		err = -ENOTDIR;
	else if (fchmod(fd, mode))
		err = -errno;
	close(fd);
	return err;
}

/* The milliseconds until the first refusal interval that held lines back
 * ends (its count is then logged), or -1: none. */
static int rl_timeout(void)
{
	int64_t end = INT64_MAX, now;
	struct pod *p;

	if (ctl_rl.held)
		end = ctl_rl.start + LOG_INTERVAL_MS;
	if (node_rl.held && node_rl.start + LOG_INTERVAL_MS < end)
		end = node_rl.start + LOG_INTERVAL_MS;
	for (p = pods; p; p = p->next)
		if (p->rl.held && p->rl.start + LOG_INTERVAL_MS < end)
			end = p->rl.start + LOG_INTERVAL_MS;
	if (end == INT64_MAX)
		return -1;
	now = now_ms();
	return end <= now ? 0 : (int)(end - now);
}

/* Log the counts of the intervals that ended. */
static void rl_tick(void)
{
	int64_t now = now_ms();
	char who[96];
	struct pod *p;

	if (ctl_rl.held && now - ctl_rl.start >= LOG_INTERVAL_MS)
		rl_flush(&ctl_rl, "control socket", now);
	if (node_rl.held && now - node_rl.start >= LOG_INTERVAL_MS)
		rl_flush(&node_rl, "node socket", now);
	for (p = pods; p; p = p->next) {
		if (!p->rl.held || now - p->rl.start < LOG_INTERVAL_MS)
			continue;
		snprintf(who, sizeof(who), "pod %s", p->uid);
		rl_flush(&p->rl, who, now);
	}
}

/* Every pod may hold TS_XDPD_POD_CLIENTS connections, each a socket and
 * a pidfd: the soft fd limit is raised to the hard one. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int serve(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct evsrc ctl_ev = { EV_CTL_LISTEN, NULL }, sig_ev = { EV_SIGNAL, NULL };
	struct evsrc node_ev = { EV_NODE_LISTEN, NULL };
	char path[PATH_MAX], npath[PATH_MAX];
	sigset_t ss;
	int lfd, nfd, sfd, err;

	umask(077);
	raise_nofile();
	ctl_rl.start = now_ms();
	node_rl.start = ctl_rl.start;
	libbpf_set_print(libbpf_quiet);
	host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (host_ns < 0) {
		logf_("cannot open /proc/self/ns/net: %s", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/pods", run_dir);
	snprintf(npath, sizeof(npath), "%s/" TS_XDPD_NODE_DIR, run_dir);
	if ((err = mkdir_root(run_dir, 0711)) || (err = mkdir_root(path, 0711)) ||
	    (err = mkdir_root(npath, 0755))) {
		logf_("run directory %s: %s (it must be root's; run as root)",
		      run_dir, strerror(-err));
		return 1;
	}
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctl.sock",
			     run_dir) >= sizeof(sa.sun_path)) {
		logf_("--run-dir %s is too long for a socket path", run_dir);
		return 1;
	}
	unlink(sa.sun_path);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0 || (err = bind_mode(lfd, sa.sun_path, 0600)) ||
	    listen(lfd, 16)) {
		logf_("control socket %s: %s", sa.sun_path,
		      strerror(err ? -err : errno));
		return 1;
	}
	/* every pod's socket: root's directory, which no pod can write (the
	 * device plugin mounts it read-only), so a plain path is safe here */
	snprintf(npath, sizeof(npath), "%s/" TS_XDPD_NODE_DIR "/" TS_XDPD_SOCK_NAME,
		 run_dir);
	unlink(npath);
	nfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (nfd < 0 || (err = bind_mode(nfd, npath, 0666)) ||
	    listen(nfd, TS_XDPD_POD_CLIENTS)) {
		logf_("node socket %s: %s", npath, strerror(err ? -err : errno));
		return 1;
	}
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &ss, SFD_CLOEXEC);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || epfd < 0) {
		logf_("signalfd/epoll: %s", strerror(errno));
		return 1;
	}
	ep_add(lfd, &ctl_ev);
	ep_add(nfd, &node_ev);
	ep_add(sfd, &sig_ev);
	state_on = 1;
	state_recover();
	logf_("serving %s and %s", sa.sun_path, npath);
	for (;;) {
		struct epoll_event evs[32];
		int n = epoll_wait(epfd, evs, 32, rl_timeout()), i;

		if (n < 0 && errno != EINTR) {
			logf_("epoll_wait: %s", strerror(errno));
			break;
		}
		rl_tick();
		for (i = 0; i < n; i++) {
			struct evsrc *ev = evs[i].data.ptr;

			switch (ev->type) {
			case EV_SIGNAL:
				goto out;
			case EV_CTL_LISTEN: {
				struct ucred cr = { 0 };
				socklen_t cl = sizeof(cr);
				struct ctlconn *cc;
				int fd = accept4(lfd, NULL, NULL,
						 SOCK_CLOEXEC | SOCK_NONBLOCK);

				if (fd < 0)
					break;
				if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) ||
				    cr.uid != 0) {
					refusal(&ctl_rl, "control socket",
						"refused pid %d uid %u: not root",
						(int)cr.pid, (unsigned)cr.uid);
					reply(fd, "error the control socket is root's");
					close(fd);
					break;
				}
				cc = calloc(1, sizeof(*cc));
				if (!cc) {
					reply(fd, "error out of memory");
					close(fd);
					break;
				}
				cc->fd = fd;
				cc->ev.type = EV_CTL_CONN;
				cc->ev.p = cc;
				ep_add(fd, &cc->ev);
				break;
			}
			case EV_CTL_CONN:
				ctl_request(ev->p);
				break;
			case EV_POD_LISTEN:
				pod_accept(ev->p, -1);
				break;
			case EV_NODE_LISTEN:
				pod_accept(NULL, nfd);
				break;
			case EV_GHOST: { /* the process exited */
				struct client *g = ev->p;

				logf_("pod %s: pid %d, which held %d steering "
				      "entries before the restart, exited: they "
				      "are removed", g->pod->uid, (int)g->pid,
				      g->nents);
				client_close(g);
				break;
			}
			case EV_CLIENT: {
				struct client *c = ev->p;

				if ((evs[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)) &&
				    !(evs[i].events & EPOLLIN))
					client_close(c);
				else
					client_request(c);
				break;
			}
			}
		}
	}
out:
	/* the programs stay attached, with their entries and XSKs, and the
	 * state file names them: the next daemon serves the pods again
	 * (state_recover); a pod's own detach (the CNI plugin's DEL) is what
	 * takes its program away */
	if (pods)
		logf_("stopping: the pods' programs stay attached for the next "
		      "tickstack-xdpd (%s/%s)", run_dir, STATE_NAME);
	while (pods) {
		struct pod *p = pods;

		pods = p->next;
		pod_free(p, 0, 1);
	}
	unlink(sa.sun_path);
	/* the node socket stays too, refusing until the next daemon
	 * replaces it (the pods' sockets above, same reason) */
	logf_("stopped");
	return 0;
}

/* ---- the client for scripts and tests */

static int ctl_main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[TS_XDPD_MSG_MAX], *rep;
	int fd, nsfd = -1;
	ssize_t n;

	if (argc >= 2 && !strcmp(argv[0], "--run-dir")) {
		run_dir = argv[1];
		argc -= 2;
		argv += 2;
	}
	if (argc == 4 && !strcmp(argv[0], "attach")) {
		nsfd = open(argv[3], O_RDONLY | O_CLOEXEC);
		if (nsfd < 0) {
			fprintf(stderr, "tickstack-xdpd ctl: %s: %s\n", argv[3],
				strerror(errno));
			return 1;
		}
		snprintf(req, sizeof(req), "attach %s %s", argv[1], argv[2]);
	} else if (argc == 2 && !strcmp(argv[0], "detach")) {
		snprintf(req, sizeof(req), "detach %s", argv[1]);
	} else if (argc == 1 && !strcmp(argv[0], "status")) {
		snprintf(req, sizeof(req), "status");
	} else {
		fprintf(stderr,
			"usage: tickstack-xdpd ctl [--run-dir DIR] attach POD-UID IFNAME NETNS-PATH\n"
			"       tickstack-xdpd ctl [--run-dir DIR] detach POD-UID\n"
			"       tickstack-xdpd ctl [--run-dir DIR] status\n");
		return 2;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctl.sock", run_dir);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "tickstack-xdpd ctl: %s: %s (is tickstack-xdpd "
			"running with --run-dir %s?)\n", sa.sun_path,
			strerror(errno), run_dir);
		return 1;
	}
	if (msg_send(fd, req, strlen(req), nsfd) < 0) {
		fprintf(stderr, "tickstack-xdpd ctl: send: %s\n", strerror(errno));
		return 1;
	}
	rep = malloc(TS_XDPD_STATUS_MAX + 1);
	if (!rep)
		return 1;
	n = recv(fd, rep, TS_XDPD_STATUS_MAX, 0);
	if (n <= 0) {
		fprintf(stderr, "tickstack-xdpd ctl: no reply\n");
		return 1;
	}
	rep[n] = 0;
	if (!strncmp(rep, "ok", 2) && (rep[2] == 0 || rep[2] == '\n')) {
		if (rep[2] == '\n')
			printf("%s\n", rep + 3);
		return 0;
	}
	fprintf(stderr, "tickstack-xdpd ctl: %s\n", rep);
	return 1;
}

int main(int argc, char **argv)
{
	int i;

	if (argc >= 2 && !strcmp(argv[1], "ctl"))
		return ctl_main(argc - 2, argv + 2);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--run-dir") && i + 1 < argc) {
			run_dir = argv[++i];
		} else if (!strcmp(argv[i], "--rx-hwtstamp")) {
			rx_hwtstamp = 1;
		} else {
			fprintf(stderr, "usage: tickstack-xdpd [--run-dir DIR] "
				"[--rx-hwtstamp] (default " DEFAULT_RUN_DIR ")\n"
				"       tickstack-xdpd ctl [--run-dir DIR] "
				"attach|detach|status ...\n");
			return 2;
		}
	}
	return serve();
}
