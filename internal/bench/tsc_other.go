//go:build !amd64 && !arm64

package bench

func readTSC() uint64 { return 0 }

// haveTSC is false where the runner cannot read the counter sockperf's times come from: its full
// log's times cannot be placed on CLOCK_MONOTONIC, and stalls go unattributed.
const haveTSC = false
