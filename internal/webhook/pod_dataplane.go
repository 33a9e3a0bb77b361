package webhook

import (
	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/render"
)

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
	// EnvDataplaneInterfaces lists the interfaces the bypass stack accelerates; every other one (the
	// cluster network) stays on the kernel.
	EnvDataplaneInterfaces = "TICKSTACK_IFACES"
	// LatencyInterfacePrefix names the secondary interfaces the webhook attaches: lat0, lat1, ...
	LatencyInterfacePrefix = "lat"

	// EnvRequire makes a socket the stack cannot accelerate an error (spec.bypass.require).
	EnvRequire = "TICKSTACK_REQUIRE"
	// EnvTCP says which TCP connections the stack carries: 0, connect or 1 (spec.bypass.tcp).
	EnvTCP = "TICKSTACK_TCP"
	// EnvXDPDSocket is the node daemon's socket: with it the library attaches nothing itself and
	// needs no admin capability (dataplane/src/xdpd.c).
	EnvXDPDSocket = "TICKSTACK_XDPD_SOCKET"
	// XDPVolume is the name the node daemon's hostPath volume had before the device plugin
	// (tsv1.XDPDResource) mounted its socket: still reserved, so no pod brings a volume under it.
	XDPVolume = "tickstack-xdp"
	// XDPMountDir is where the device plugin mounts the daemon's node socket directory, read-only
	// (cmd/tickstack-xdpd-plugin's --container-path).
	XDPMountDir = "/run/tickstack"
	// XDPSocketInPod is the daemon's socket as the container sees it.
	XDPSocketInPod = XDPMountDir + "/xdp.sock"
	// DefaultXDPRunDir is tickstack-xdpd's --run-dir on the node (the chart's xdpd.runDir).
	DefaultXDPRunDir = render.DefaultXDPRunDir
)

// DataplaneTools are the inspection tools the init container copies beside the library, so that
// `kubectl exec POD -- /opt/tickstack/lib/tickstack-dump ...` works in any application image
// (docs/dataplane.md, "Seeing inside the bypass"). They need no capability: they read and write the
// process's files in the pod's own /dev/shm, as the process's user.
const DataplaneTools = "tickstack-stats tickstack-dump tickstack-stackdump"

// dataplaneCopyScript copies the library, the inspection tools and the libraries they link (libxdp,
// libbpf, libelf, libz; libpcap and its own for tickstack-dump) but not glibc's, which must stay the
// application's own, into the shared folder. The library and the tools carry RUNPATH $ORIGIN, so
// they find them there whatever image the trading application uses.
const dataplaneCopyScript = `set -eu
lib=` + DataplaneLibraryInImage + `
bins="$lib"
for t in ` + DataplaneTools + `; do bins="$bins ${lib%/*}/$t"; done
for f in $bins; do
  cp "$f" ` + DataplaneLibraryDir + `/
  ldd "$f" | awk '$3 ~ /^\// {print $3}' | while read -r dep; do
    case "${dep##*/}" in libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;; *) cp -L "$dep" ` + DataplaneLibraryDir + `/ ;; esac
  done
done`

// tcpEnv is TICKSTACK_TCP's value for a profile's spec.bypass.tcp.
var tcpEnv = map[tsv1.BypassTCP]string{tsv1.BypassTCPOff: "0", tsv1.BypassTCPConnect: "connect", tsv1.BypassTCPOn: "1"}
