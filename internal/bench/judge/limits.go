package judge

// BurstsPerSecond is how often the microburst suite repeats a burst: 100 ms apart, so the receiver
// has drained the previous burst before the next one.
const BurstsPerSecond = 10

// Size limits of sockperf 3.7 over a 1500 B MTU: 14 B is its smallest message (the papers' 12 B is
// refused), 1472 B is the largest UDP payload that fits one IPv4 frame.
const (
	MinMessageSize = 14
	MaxMessageSize = 1472
)

// MaxPTPDomain is the highest PTP domain number ptp4l accepts.
const MaxPTPDomain = 127

// MaxUDSPath is the longest UNIX socket path Linux accepts (sun_path minus its NUL).
const MaxUDSPath = 107

// Limits of the tick-to-trade rig (dataplane/t2t): a tick is at least its 32-byte header, and the
// publisher paces at most 10M msg/s.
const (
	MinT2TMessageSize = 32
	MaxT2TRate        = 10000000
)

// Receive buffer sizes a microburst or rateSweep may ask of the reflector's sockperf server
// (sockperf --buffer-size, SO_RCVBUF): 4 KiB, a page, is far below any socket's default; 64 MiB is
// far above the defaults of net.core.rmem_max, which caps the request anyway. A microburst runs
// at most MaxReceiveBufferSizes of them (the CRD's maxItems).
const (
	MinReceiveBufferBytes = 4096
	MaxReceiveBufferBytes = 64 << 20
	MaxReceiveBufferSizes = 8
)
