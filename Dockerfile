# Images of tickstack: the manager, the node agent and the benchmark pods, as targets of one file.
# No image registry is reachable where this builds, so nothing here is pulled:
#   - the bases are Debian root filesystems made locally by debootstrap (hack/images/debian-rootfs.sh)
#     and committed into buildah's local storage by hack/images/build.sh;
#   - binaries are built before (go build, the dataplane's make) and COPYed from the build context,
#     which hack/images/build.sh stages as:
#       bin/manager, bin/agent, bin/tickstack-xdp-cni
#                                 the Go binaries (static)
#       bench-bin/                binaries for the bench image (cmd/tickstack, cmd/tickstack-bench when
#                                 present), may be empty
#       dataplane/                the dataplane's runtime outputs (dataplane/build/*.so, *.bpf.o, tools,
#                                 the tick-to-trade rig t2t-pub, t2t-strategy, t2t-exchange) when it
#                                 was built (make dataplane), else empty
# Build:  hack/images/build.sh [--import] [manager] [agent] [bench]
# Direct: buildah bud --target agent -t localhost/tickstack-agent:dev -f Dockerfile <staged context>

ARG BASE_IMAGE=localhost/tickstack-debian:bookworm
ARG TOOLS_IMAGE=localhost/tickstack-debian-tools:bookworm

# The operator: a static Go binary on a minimal Debian, non-root.
FROM ${BASE_IMAGE} AS manager
COPY bin/manager /usr/local/bin/manager
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/manager"]

# What every node-side image carries: ethtool, iproute2, sockperf, rt-tests (cyclictest, oslat,
# hwlatdetect), linuxptp (ptp4l, phc2sys, pmc), libxdp/libbpf, QuickFIX's runtime (libquickfix17, for
# the tick-to-trade rig), and the dataplane's build outputs, on PATH.
FROM ${TOOLS_IMAGE} AS node-tools
COPY dataplane/ /opt/tickstack/dataplane/
ENV PATH=/opt/tickstack/dataplane/bin:/opt/tickstack/dataplane:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The node agent (a DaemonSet): tunes its own node; runs as root, privileges come from the pod spec.
# The same pod runs the dataplane's tickstack-xdpd and installs the tickstack-xdp CNI plugin (static,
# it runs on the host) into the node's CNI directory.
FROM node-tools AS agent
COPY bin/agent /usr/local/bin/agent
COPY bin/tickstack-xdp-cni /usr/local/bin/tickstack-xdp-cni
ENTRYPOINT ["/usr/local/bin/agent"]

# The benchmark pods: sockperf, the tick-to-trade rig and the bypass stack, driven by the command the
# LatencyBenchmark sets.
FROM node-tools AS bench
COPY bench-bin/ /usr/local/bin/
CMD ["sleep", "infinity"]
