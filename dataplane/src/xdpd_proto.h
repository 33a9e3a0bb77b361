/* SPDX-License-Identifier: Apache-2.0 */
/* xdpd_proto.h - the pod protocol between libtickstack and tickstack-xdpd
 * (private to the dataplane; docs/dataplane.md "Privilege model").
 *
 * A SOCK_SEQPACKET connection to the pod's xdp.sock, one request per
 * message, one reply per message, ASCII text; where a request proves
 * something it carries ONE file descriptor (SCM_RIGHTS):
 *   hello                                  -> "ok IFNAME..." (the pod's interfaces)
 *   busy IFNAME QUEUE                      -> "ok 0|1" (1: a live process of
 *                                            the pod holds that queue)
 *   xsk IFNAME QUEUE             + XSK fd  -> "ok native|skb"
 *   add IFNAME udp|tcp ADDR PORT + socket  -> "ok"
 *   share IFNAME udp|tcp ADDR PORT + socket-> "ok 0|1" (1: another process's
 *                                            entry now leaves it to the kernel)
 *   shared IFNAME udp|tcp ADDR PORT        -> "ok 0|1" (own entry marked shared)
 *   del IFNAME udp|tcp ADDR PORT           -> "ok"
 * Errors: "error ERRNO TEXT" (ERRNO a positive errno number). The daemon
 * removes a connection's XSKMAP slots and steering entries when it closes
 * (the process exited or was killed). */
#ifndef TS_XDPD_PROTO_H
#define TS_XDPD_PROTO_H

#define TS_XDPD_MSG_MAX 512    /* one request or reply line */
#define TS_XDPD_STATUS_MAX 65536 /* a status reply (control socket) */
#define TS_XDPD_CLIENT_ENTRIES 1024 /* steering entries per connection */
#define TS_XDPD_POD_IFS 4      /* interfaces attached per pod */
#define TS_XDPD_SOCK_NAME "xdp.sock"

#endif
