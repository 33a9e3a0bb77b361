/* SPDX-License-Identifier: Apache-2.0 */
/* xdpd_proto.h - the pod protocol between libtickstack and tickstack-xdpd
 * (private to the dataplane; docs/dataplane.md "Privilege model").
 *
 * A SOCK_SEQPACKET connection to the pod's xdp.sock (DIR/pods/UID/, or
 * DIR/node/ for every pod: the daemon tells the pod by the caller's
 * network namespace), one request per
 * message, one reply per message, ASCII text; where a request proves
 * something it carries ONE file descriptor (SCM_RIGHTS):
 *   hello                                  -> "ok IFNAME..." (the pod's interfaces)
 *   busy IFNAME QUEUE                      -> "ok 0|1" (1: a live process of
 *                                            the pod holds that queue)
 *   umem IFNAME QUEUE FRAME RING + memfd   -> "ok native|skb TXMD [sg] [hwts]" + XSK fd
 *                                            (the default: the daemon makes
 *                                            the XSK, the pod needs no
 *                                            capability; below)
 *   xsk IFNAME QUEUE [sg]        + XSK fd  -> "ok native|skb [hwts]" (the fallback:
 *                                            the process made it, CAP_NET_RAW;
 *                                            sg: bound with XDP_USE_SG)
 *   add IFNAME udp|tcp ADDR PORT + socket  -> "ok"
 *   share IFNAME udp|tcp ADDR PORT + socket-> "ok 0|1" (1: another process's
 *                                            entry now leaves it to the kernel)
 *   shared IFNAME udp|tcp ADDR PORT        -> "ok 0|1" (own entry marked shared)
 *   del IFNAME udp|tcp ADDR PORT           -> "ok"
 * "hwts" (last): the interface's program is the device-bound ts_steer_hw
 * (tickstack-xdpd --rx-hwtstamp): each steered frame carries struct
 * ts_xdp_meta before its data (steer_common.h).
 * "umem": the memfd (memfd_create) is the UMEM, every page already written
 * (so charged to the pod's memory cgroup; else "error 14", EFAULT), a
 * multiple of FRAME bytes (2048 or 4096) and at most TS_XDPD_UMEM_MAX. The
 * daemon creates the AF_XDP socket in the pod's network namespace (the one
 * the CNI plugin's attach named, never one the client names), registers
 * the UMEM from its own mapping of the memfd (TX metadata room of TXMD
 * bytes when the kernel has it, else TXMD is 0), sizes the four rings to
 * RING entries, binds it to QUEUE of IFNAME (with XDP_USE_SG when the
 * interface's MTU makes frames longer than one UMEM frame takes and the
 * kernel allows it: the reply then ends in "sg", and the steering entries
 * of that XSK let jumbo frames through to it as chains of frames), puts it
 * in the XSKMAP and passes it back; it keeps no copy. The process maps the rings from that
 * fd and the memfd as its UMEM. The pinned pages are not charged to the
 * daemon's RLIMIT_MEMLOCK (it holds CAP_IPC_LOCK): a pod's XSKs hold at
 * most TS_XDPD_POD_UMEM bytes of UMEM ("error 28", ENOSPC).
 * Errors: "error ERRNO TEXT" (ERRNO a positive errno number). The daemon
 * removes a connection's XSKMAP slots and steering entries when it closes
 * (the process exited or was killed); a message of length 0 closes it too.
 *
 * Limits (docs/dataplane.md, "Privilege model"): a request is one message
 * of at most TS_XDPD_MSG_MAX - 1 bytes of text with no NUL byte and at most
 * one fd, else "error 71" (EPROTO) or "error 74" (EBADMSG), and the
 * connection stays usable; a pod holds at most TS_XDPD_POD_CLIENTS
 * connections ("error 24", EMFILE, and the connection is closed); a
 * connection holds at most TS_XDPD_CLIENT_ENTRIES steering entries and a
 * pod at most TS_XDPD_IF_ENTRIES per interface, the size of that
 * interface's steering map ("error 28", ENOSPC). So one pod's entries fit
 * its own maps exactly: four connections can fill an interface, none can
 * overflow it. */
#ifndef TS_XDPD_PROTO_H
#define TS_XDPD_PROTO_H

#define TS_XDPD_MSG_MAX 512    /* one request or reply line */
#define TS_XDPD_STATUS_MAX 65536 /* a status reply (control socket) */
#define TS_XDPD_CLIENT_ENTRIES 1024 /* steering entries per connection */
#define TS_XDPD_IF_ENTRIES 4096 /* per pod interface: TS_STEER_MAX_ENTRIES */
#define TS_XDPD_POD_CLIENTS 64 /* connections per pod */
#define TS_XDPD_POD_IFS 4      /* interfaces attached per pod */
#define TS_XDPD_RING_MAX 4096  /* entries of each XSK ring ("umem") */
#define TS_XDPD_UMEM_MAX (512ull << 20) /* one "umem" memfd */
#define TS_XDPD_POD_UMEM (1ull << 30)   /* registered UMEM per pod */
#define TS_XDPD_TXMD_LEN 24    /* TX metadata room (struct xsk_tx_metadata) */
#define TS_XDPD_SOCK_NAME "xdp.sock"
/* DIR/node/xdp.sock: every pod's socket, the pod told by the caller's
 * network namespace (tools/tickstack-xdpd.c) */
#define TS_XDPD_NODE_DIR "node"

/* ---- fd passing, written once for both ends (the library's src/xdpd.c,
 * the daemon's tools/tickstack-xdpd.c): each sends and receives with its
 * own sendmsg/recvmsg (the library through its real-libc table). */
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

/* A control buffer for one fd. */
#define TS_XDPD_CBUF_ONE CMSG_SPACE(sizeof(int))

/* Attach fd (>= 0) to mh as SCM_RIGHTS, in cbuf (TS_XDPD_CBUF_ONE bytes). */
static inline void ts_xdpd_fd__attach(struct msghdr *mh, char *cbuf, int fd)
{
	struct cmsghdr *c;

	memset(cbuf, 0, TS_XDPD_CBUF_ONE);
	mh->msg_control = cbuf;
	mh->msg_controllen = TS_XDPD_CBUF_ONE;
	c = CMSG_FIRSTHDR(mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
}

/* The fds a received message carried: the first into *fd when fd is not
 * NULL and *fd is -1, every other one closed with close_fn. Returns how
 * many were closed. */
static inline int ts_xdpd_fd__take(struct msghdr *mh, int *fd,
				   int (*close_fn)(int))
{
	struct cmsghdr *c;
	int closed = 0;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t k, nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < nfd; k++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (fd && *fd < 0) {
				*fd = f;
			} else {
				close_fn(f);
				closed++;
			}
		}
	}
	return closed;
}

#endif
