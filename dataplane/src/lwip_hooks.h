/* SPDX-License-Identifier: Apache-2.0 */
/* lwip_hooks.h - the hooks tickstack gives lwIP (LWIP_HOOK_FILENAME in
 * src/lwipopts.h): lwIP's sources include this file where they call them. */
#ifndef TS_LWIP_HOOKS_H
#define TS_LWIP_HOOKS_H

#include <lwip/ip_addr.h>

/* RFC 6528 initial sequence numbers (src/tcp_isn.c) */
u32_t ts_isn__hook(const ip_addr_t *local_ip, u16_t local_port,
		   const ip_addr_t *remote_ip, u16_t remote_port);
/* the key, before the first connection (no file I/O under lwIP's lock) */
int ts_isn__init(void);

/* tcp_output_segment sends a segment again (lwip-patches/0002): counted in
 * the statistics region's tcp_ext.rexmit_segs (src/tcp.c) */
struct tcp_pcb;
void ts_tcp__rexmit_hook(const struct tcp_pcb *pcb);

#endif
