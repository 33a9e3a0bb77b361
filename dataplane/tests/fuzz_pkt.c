// SPDX-License-Identifier: Apache-2.0
/* fuzz_pkt.c - libFuzzer target for the packet parser: any byte string is
 * parsed; when it parses, the checksum verifier runs on it and the
 * reported payload must lie inside the frame; rebuilding the headers from
 * what was parsed must give a frame that parses to the same fields. */
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
	(void)ts_pkt__verify_csum(data, size, &m);
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
	return 0;
}
