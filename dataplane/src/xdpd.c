// SPDX-License-Identifier: Apache-2.0
/* xdpd.c - the library's side of the pod protocol (src/xdpd_proto.h):
 * with TICKSTACK_XDPD_SOCKET set the node's tickstack-xdpd owns XDP; this
 * process passes its UMEM (a memfd) and gets back the XSK the daemon made
 * for it (TICKSTACK_XDPD_MODE=netraw: it creates the XSK itself, with
 * CAP_NET_RAW, and hands it over), and asks the daemon to steer its ports,
 * proving each port with the kernel socket bound to it. No map fd ever
 * enters the process.
 *
 * One connection per process (a forked child opens its own: the daemon
 * ties entries to the connection, which closes when the process dies).
 * Requests are synchronous, under xdpd_lock, on the control path only.
 *
 * The daemon may restart (an upgrade, a crash): its program, maps, steering
 * entries and this process's XSKs stay, and the new daemon gives them back
 * to the connection this process opens again (docs/dataplane.md, "Daemon
 * restarts"). A request that finds its connection closed connects again
 * and is sent once more; while the socket path is missing or refuses
 * (ENOENT, ECONNREFUSED; a process that never connected waits only for a
 * socket that refuses, one a daemon served) a request waits for it with a
 * backoff of 2 ms doubling to 200 ms, at most TICKSTACK_XDPD_WAIT_MS in
 * all; once a wait ran out, requests try once without waiting until the
 * daemon answers.
 * The data path never waits: only binds, connects and closes ask. */
#include "ts_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/un.h>
#include <unistd.h>

#include "steer_common.h"
#include "tcp_internal.h"
#include "xdpd_proto.h"

static pthread_mutex_t xdpd_lock = PTHREAD_MUTEX_INITIALIZER;
static int xdpd_fd = -1;
static pid_t xdpd_pid; /* process that opened xdpd_fd */
static int xdpd_failed_logged;
static int xdpd_ever; /* a connection was up once: a refusal is a restart */
static int xdpd_down; /* a wait ran out: no more waits until one connects */
static int xdpd_lost; /* the connection was lost: say when it is back */

/* Nothing listens on the daemon's path (yet): it is starting again. */
static int xdpd__restarting(int err)
{
	return err == -ECONNREFUSED || err == -ENOENT || err == -EAGAIN;
}

static int xdpd__dial(int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ts_cfg.xdpd_socket);
	fd = ts_real_socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ts_real_connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		ts_real_close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

int ts_xdpd__on(void)
{
	return ts_cfg.xdpd_socket[0] != 0;
}

static int xdpd__connect_locked(void)
{
	struct timeval tmo = { .tv_sec = 5 };
	long waited = 0, step = 2;
	int fd = -1, err;

	if (xdpd_fd >= 0 && xdpd_pid == ts_getpid())
		return 0;
	if (xdpd_fd >= 0) /* the parent's connection: never speak on it */
		ts_real_close(xdpd_fd);
	xdpd_fd = -1;
	while ((err = xdpd__dial(&fd))) {
		struct timespec ts;

		/* a daemon that restarts: its socket comes back (a socket
		 * that refuses was served before, whoever connected) */
		if (!xdpd_down && xdpd__restarting(err) &&
		    (xdpd_ever || err == -ECONNREFUSED) &&
		    waited < ts_cfg.xdpd_wait_ms) {
			if (step > ts_cfg.xdpd_wait_ms - waited)
				step = ts_cfg.xdpd_wait_ms - waited;
			ts.tv_sec = step / 1000;
			ts.tv_nsec = (step % 1000) * 1000000;
			nanosleep(&ts, NULL);
			waited += step;
			step = step * 2 > 200 ? 200 : step * 2;
			continue;
		}
		if (xdpd_ever && xdpd__restarting(err)) {
			if (!xdpd_down)
				ts_log("tickstack-xdpd at %s: not back after %d ms "
				       "(%s): until it is, new sockets %s; each "
				       "request tries again", ts_cfg.xdpd_socket,
				       ts_cfg.xdpd_wait_ms, strerror(-err),
				       ts_cfg.require ?
					       "fail (TICKSTACK_REQUIRE=1)" :
					       "stay on the kernel");
			xdpd_down = 1;
			return err;
		}
		if (waited) /* waited once for a refusing socket */
			xdpd_down = 1;
		if (!xdpd_failed_logged++)
			ts_log("TICKSTACK_XDPD_SOCKET=%s: cannot connect (%s): the "
			       "node's tickstack-xdpd must serve this pod (the "
			       "tickstack-xdp CNI plugin attaches the pod's "
			       "interface, the webhook mounts the socket); until "
			       "then sockets %s",
			       ts_cfg.xdpd_socket, strerror(-err),
			       ts_cfg.require ? "fail (TICKSTACK_REQUIRE=1)" :
						"stay on the kernel");
		return err;
	}
	if (xdpd_lost)
		ts_log("tickstack-xdpd at %s: connected again", ts_cfg.xdpd_socket);
	xdpd_ever = 1;
	xdpd_down = 0;
	xdpd_lost = 0;
	/* a daemon that stops answering must not hang a bind forever */
	ts_real_setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	xdpd_fd = fd;
	xdpd_pid = ts_getpid();
	return 0;
}

/* Receive the reply into buf; *gotfd (when asked for) gets the one fd it
 * carried, any other fd is closed. */
static ssize_t xdpd__recv(char *buf, size_t cap, int flags, int *gotfd)
{
	char cbuf[TS_XDPD_CBUF_ONE];
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	ssize_t n;

	n = ts_real_recvmsg(xdpd_fd, &mh, flags | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	ts_xdpd_fd__take(&mh, gotfd, ts_real_close);
	return n;
}

/* The daemon's connection gone (how: "closed" or "lost"), logged with
 * what follows (then) and closed; the next request connects again. */
static void xdpd__drop_locked(const char *how, int err, const char *then)
{
	ts_log("tickstack-xdpd at %s: connection %s (%s): %s",
	       ts_cfg.xdpd_socket, how, strerror(-err), then);
	ts_real_close(xdpd_fd);
	xdpd_fd = -1;
	xdpd_lost = 1;
}

/* Closes the fd a reply carried, if any (gotfd may be NULL). */
static void drop_fd(int *gotfd)
{
	if (gotfd && *gotfd >= 0) {
		ts_real_close(*gotfd);
		*gotfd = -1;
	}
}

/* One request, one reply. 0 ("ok ..."; rep holds what follows "ok") or a
 * negative errno (the daemon's, its text logged). */
int ts_xdpd__request(const char *req, int passfd, char *rep, size_t cap)
{
	return ts_xdpd__request_fd(req, passfd, rep, cap, NULL);
}

/* The same; *gotfd (-1 before) gets the fd an "ok" reply carried. */
int ts_xdpd__request_fd(const char *req, int passfd, char *rep, size_t cap,
			int *gotfd)
{
	char cbuf[TS_XDPD_CBUF_ONE], buf[TS_XDPD_MSG_MAX];
	struct iovec iov = { .iov_base = (void *)req, .iov_len = strlen(req) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int err, reused, again = 0;
	ssize_t n;

	pthread_mutex_lock(&xdpd_lock);
retry:
	/* a connection of an earlier request: the daemon may have restarted
	 * since (it closed), and then the request is sent again once */
	reused = xdpd_fd >= 0 && xdpd_pid == ts_getpid() && !again;
	err = xdpd__connect_locked();
	if (err)
		goto out;
	if (passfd >= 0)
		ts_xdpd_fd__attach(&mh, cbuf, passfd);
	if (ts_real_sendmsg(xdpd_fd, &mh, MSG_NOSIGNAL) < 0) {
		err = -errno;
		if (err != -EPIPE && err != -ECONNRESET)
			goto out_reset;
		if (reused)
			goto out_again;
		/* the daemon refused this connection at accept and closed it
		 * before the request went out: its reply is already queued */
		n = xdpd__recv(buf, sizeof(buf) - 1, MSG_DONTWAIT, gotfd);
		if (n <= 0)
			goto out_reset;
	} else {
		do
			n = xdpd__recv(buf, sizeof(buf) - 1, 0, gotfd);
		while (n < 0 && errno == EINTR);
		/* a refusal closes the connection; if our request was still
		 * unread then, a reset comes first and the reply behind it */
		if (n < 0 && errno == ECONNRESET) {
			n = xdpd__recv(buf, sizeof(buf) - 1, MSG_DONTWAIT,
				       gotfd);
			if (n < 0)
				errno = ECONNRESET; /* nothing behind it */
		}
	}
	if (n <= 0) {
		err = n < 0 ? -errno : -ECONNRESET;
		if (reused && (err == -ECONNRESET || err == -EPIPE))
			goto out_again;
		goto out_reset;
	}
	buf[n] = 0;
	if (strncmp(buf, "ok", 2))
		drop_fd(gotfd); /* an fd with a refusal: not ours */
	if (!strncmp(buf, "ok", 2)) {
		if (rep)
			snprintf(rep, cap, "%s", buf[2] ? buf + 3 : "");
		err = 0;
		goto out;
	}
	err = -EPROTO;
	if (!strncmp(buf, "error ", 6)) {
		int e = atoi(buf + 6);

		err = e > 0 ? -e : -EPROTO;
	}
	/* refusals the caller handles itself (a port another process of the
	 * pod steers, an entry already gone or another's, after a fork, a
	 * queue another process holds) are not news */
	if (err != -EADDRINUSE && err != -ENOENT && err != -EPERM &&
	    err != -EBUSY)
		ts_log("tickstack-xdpd refused '%s': %s", req, buf + 6);
	goto out;
out_again:
	/* closed under us: a daemon that stopped; its successor takes this
	 * process's entries and XSKs over when it connects again */
	xdpd__drop_locked("closed", err, "the daemon restarts; connecting again");
	again = 1;
	drop_fd(gotfd);
	goto retry;
out_reset:
	xdpd__drop_locked("lost", err, "sockets stay on the kernel");
out:
	pthread_mutex_unlock(&xdpd_lock);
	return err;
}

/* Whether the daemon attached ifname for this pod. */
int ts_xdpd__serves(const char *ifname)
{
	char rep[TS_XDPD_MSG_MAX], *tok, *save = NULL;

	if (ts_xdpd__request("hello", -1, rep, sizeof(rep)))
		return 0;
	for (tok = strtok_r(rep, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		if (!strcmp(tok, ifname))
			return 1;
	return 0;
}

/* Whether fd is one of the library's own sockets, per protocol: each
 * socket layer registers its own at start (the daemon's protocol, below
 * them, keeps no table of sockets). */
static int (*owns_udp)(int fd), (*owns_tcp)(int fd);

void ts_xdpd__register_owner(int proto, int (*owns)(int fd))
{
	if (proto == TS_STEER_TCP)
		owns_tcp = owns;
	else
		owns_udp = owns;
}

/* A socket of this process bound to (daddr or any, dport) of proto: the
 * proof the daemon asks for. Only the library's own shadow sockets are
 * looked at (the socket layer's table, then getsockname). -ENOENT when
 * none. */
int ts_xdpd__proof_fd(uint32_t daddr, uint16_t dport, int proto)
{
	int want = proto == TS_STEER_TCP ? IPPROTO_TCP : IPPROTO_UDP;
	int (*owns)(int fd) = want == IPPROTO_TCP ? owns_tcp : owns_udp;
	int fd;

	for (fd = 0; owns && fd < TS_XDPD_MAX_FD; fd++) {
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa), il = sizeof(int);
		int p = 0;

		if (!owns(fd))
			continue;
		if (ts_real_getsockname(fd, (struct sockaddr *)&sa, &len) < 0 ||
		    sa.sin_family != AF_INET || sa.sin_port != dport ||
		    (sa.sin_addr.s_addr && sa.sin_addr.s_addr != daddr))
			continue;
		if (ts_real_getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &p, &il) ||
		    p != want)
			continue;
		return fd;
	}
	return -ENOENT;
}

/* "OP IFNAME udp|tcp ADDR PORT" with the proof when the op needs one. */
int ts_xdpd__steer(const char *op, const char *ifname, uint32_t daddr,
		   uint16_t dport, int proto, char *rep, size_t cap)
{
	char req[128], a[INET_ADDRSTRLEN];
	int proof = -1;

	if (!strcmp(op, "add") || !strcmp(op, "share")) {
		proof = ts_xdpd__proof_fd(daddr, dport, proto);
		if (proof < 0)
			return -EBADF;
	}
	inet_ntop(AF_INET, &daddr, a, sizeof(a));
	snprintf(req, sizeof(req), "%s %s %s %s %u", op, ifname,
		 proto == TS_STEER_TCP ? "tcp" : "udp", a, ntohs(dport));
	return ts_xdpd__request(req, proof, rep, cap);
}

/* The child speaks on its own connection (opened at its first need). */
void ts_xdpd__after_fork_child(void)
{
	pthread_mutex_init(&xdpd_lock, NULL);
	if (xdpd_fd >= 0)
		ts_real_close(xdpd_fd);
	xdpd_fd = -1;
}
