package webhook

// The bypass stack's settings the pod webhook injects. The dataplane (dataplane/src/config.c,
// ts_config__load, and dataplane/tools/tickstack-run.sh) reads these variables; keep the names in
// step with it. Its "latency" profile spins up to 100 ms before sleeping and polls the kernel socket
// every 256 spins (as OpenOnload's EF_POLL_USEC=100000); explicit TICKSTACK_* variables win, so a
// pod that sets one of them itself keeps its value.
const (
	// EnvPreload makes the dynamic loader load the bypass library before libc.
	EnvPreload = "LD_PRELOAD"
	// EnvDataplaneProfile selects the dataplane's spin/poll profile: latency, throughput or default.
	EnvDataplaneProfile = "TICKSTACK_PROFILE"
	// DataplaneLatencyProfile is the dataplane profile latency pods get.
	DataplaneLatencyProfile = "latency"

	// DataplaneLibraryInImage is where the dataplane image holds the library (the Dockerfile's
	// node-tools stage copies dataplane/build/* to /opt/tickstack/dataplane/).
	DataplaneLibraryInImage = "/opt/tickstack/dataplane/libtickstack.so"
	// DataplaneLibraryDir is where the library is mounted in the latency container.
	DataplaneLibraryDir = "/opt/tickstack/lib"
	// DataplaneLibraryName is the library's file name.
	DataplaneLibraryName = "libtickstack.so"
	// DataplaneVolume is the emptyDir the init container copies the library into.
	DataplaneVolume = "tickstack-dataplane"
	// DataplaneInitContainer is the name of the init container that copies the library.
	DataplaneInitContainer = "tickstack-dataplane"
)
