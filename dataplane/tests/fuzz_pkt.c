// SPDX-License-Identifier: Apache-2.0
/* fuzz_pkt.c - libFuzzer target for the packet parser: any byte string is
 * parsed; when it parses, the checksum verifier runs on it and the
 * reported payload must lie inside the frame; the inline receive check
 * takes it only when the full one does; rebuilding the headers from what
 * was parsed must give a frame that parses to the same fields, and the
 * prepared headers of the send path (struct ts_udp_tmpl) the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pkt.h"

/* libFuzzer's entry point, called by its runtime */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_udp_meta m, m2;
	struct ts_udp_hdr_spec s;
	uint8_t f[2048];
	int n;

	if (ts_pkt__parse_udp(data, size, &m))
		return 0;
	if ((size_t)m.payload_off + m.payload_len > size)
		abort();
	if (ts_pkt__csum_fast_ok(data, &m)) {
		struct ts_udp_meta ip_only = m;

		ip_only.udp_csum = 0;
		if (!(m.udp_csum && ts_pkt__csum_is_partial(&m) &&
		      !ts_pkt__verify_csum(data, size, &ip_only)) &&
		    ts_pkt__verify_csum(data, size, &m))
			abort();
	} else {
		(void)ts_pkt__verify_csum(data, size, &m);
	}
	if (m.payload_len > sizeof(f) - TS_HDRS_LEN)
		return 0;
	memset(&s, 0, sizeof(s));
	memcpy(s.dmac, m.dmac, 6);
	memcpy(s.smac, m.smac, 6);
	s.saddr = m.saddr;
	s.daddr = m.daddr;
	s.sport = m.sport;
	s.dport = m.dport;
	s.ttl = m.ttl;
	s.udp_csum = 1;
	memcpy(f + TS_HDRS_LEN, data + m.payload_off, m.payload_len);
	n = ts_pkt__build_udp(f, sizeof(f), m.payload_len, &s);
	if (n < 0 || ts_pkt__parse_udp(f, (size_t)n, &m2) ||
	    m2.saddr != m.saddr || m2.daddr != m.daddr || m2.sport != m.sport ||
	    m2.dport != m.dport || m2.payload_len != m.payload_len ||
	    ts_pkt__verify_csum(f, (size_t)n, &m2))
		abort();
	{
		static uint8_t g[2048];
		struct ts_udp_tmpl t;
		uint16_t id = (uint16_t)(m.sport ^ m.dport);

		s.tos = m.tos;
		s.udp_csum = m.udp_csum % 3 == 2 ? TS_UDP_CSUM_PARTIAL :
						    (int)(m.udp_csum % 3);
		ts_pkt__udp_tmpl_init(&t, &s);
		s.ip_id = id;
		memcpy(g + TS_HDRS_LEN, f + TS_HDRS_LEN, m.payload_len);
		n = ts_pkt__build_udp(f, sizeof(f), m.payload_len, &s);
		if (n != ts_pkt__udp_tmpl_put(g, &t, m.payload_len, id) ||
		    memcmp(f, g, TS_HDRS_LEN))
			abort();
	}
	return 0;
}
