# Images of tickstack: the manager, the node agent (which also runs tickstack-xdpd and carries the
# tickstack-xdp CNI plugin: there is no separate xdpd image) and the benchmark pods, as targets of one
# file. docs/images.md explains building and pushing them.
#
# By default everything comes from public images and is compiled inside the build, so a workstation
# with only docker (or podman, or buildah) and a clone builds it:
#   docker build --target manager -t REGISTRY/tickstack-manager:VERSION \
#     --build-arg VERSION=... --build-arg COMMIT=... .
# (make images REGISTRY=... does this for every target, with VERSION and COMMIT from the clone).
#
# Where no image registry is reachable (this project's machines), hack/images/build.sh --bases local
# passes local Debian bases made by debootstrap (BASE_IMAGE, TOOLS_IMAGE) and BINARIES=prebuilt with a
# build context it stages from binaries built on the host:
#   prebuilt/bin/         manager, agent, tickstack-xdp-cni, tickstack-xdpd-plugin (static Go binaries)
#   prebuilt/bench-bin/   tickstack, tickstack-bench, tickstack-bench-upload
#   prebuilt/dataplane/   the dataplane's runtime outputs (hack/images/dataplane-outputs.sh)
# Only the stages a target needs are built (docker's BuildKit, podman and buildah skip the others).

# Public bases (Debian bookworm, as the dataplane and its runtime packages are built for).
ARG BASE_IMAGE=debian:bookworm-slim
ARG TOOLS_IMAGE=tools-debian
ARG GOLANG_IMAGE=golang:1.26-bookworm
ARG BUILD_IMAGE=debian:bookworm
# source: compile in the build; prebuilt: take the staged context's prebuilt/ directory.
ARG BINARIES=source

# ---- compiled inside the build (BINARIES=source) ----

# The Go binaries, static, stamped as hack/ldflags.sh stamps them (VERSION, COMMIT, DATE: build
# arguments, since the build context has no .git).
FROM ${GOLANG_IMAGE} AS go-build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
COPY cmd/ cmd/
ARG VERSION=dev
ARG COMMIT=unknown
ARG MODIFIED=false
ARG DATE=unknown
RUN set -e; pkg=github.com/tickstack/tickstack/internal/version; \
    for name in manager agent tickstack-xdp-cni tickstack-xdpd-plugin tickstack tickstack-bench tickstack-bench-upload; do \
      CGO_ENABLED=0 go build -trimpath \
        -ldflags "-s -w -X $pkg.Version=$VERSION -X $pkg.Commit=$COMMIT -X $pkg.Modified=$MODIFIED -X $pkg.Date=$DATE" \
        -o /out/bin/$name ./cmd/$name; \
    done; \
    mkdir -p /out/bench-bin; \
    mv /out/bin/tickstack /out/bin/tickstack-bench /out/bin/tickstack-bench-upload /out/bench-bin/

# The dataplane (the bypass library, tickstack-xdpd, the tools, the tick-to-trade rig) with Debian's
# toolchain; lwIP comes from Debian's source package, checked against hack/lwip-source.sha256.
FROM ${BUILD_IMAGE} AS dataplane-build
RUN apt-get update && apt-get install -y --no-install-recommends \
      make gcc g++ libc6-dev clang llvm bpftool libxdp-dev libbpf-dev libsodium-dev libelf-dev zlib1g-dev pkg-config \
      libquickfix-dev libpcap-dev dpkg-dev ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY hack/lwip-source.sh hack/lwip-source.sha256 hack/images/dataplane-outputs.sh hack/
COPY dataplane/ dataplane/
RUN make -C dataplane -j"$(nproc)" all t2t build/conform && hack/dataplane-outputs.sh dataplane/build /out/dataplane

FROM scratch AS bins-source
COPY --from=go-build /out/ /out/
COPY --from=dataplane-build /out/ /out/

# ---- prebuilt on the host (BINARIES=prebuilt) ----
FROM scratch AS bins-prebuilt
COPY prebuilt/ /out/

FROM bins-${BINARIES} AS bins

# The node tools on the public Debian base (TOOLS_IMAGE's default): hack/images/tools-packages.txt.
FROM ${BASE_IMAGE} AS tools-debian
COPY hack/images/tools-packages.txt /tmp/tools-packages.txt
RUN apt-get update \
    && sed -e 's/#.*//' /tmp/tools-packages.txt | xargs apt-get install -y --no-install-recommends \
    && rm -rf /var/lib/apt/lists/* /tmp/tools-packages.txt

# ---- the images ----

# The operator: a static Go binary on a minimal Debian, non-root.
FROM ${BASE_IMAGE} AS manager
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title=tickstack-manager org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${COMMIT}
COPY --from=bins /out/bin/manager /usr/local/bin/manager
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/manager"]

# What every node-side image carries: the node tools and the dataplane's build outputs, on PATH.
FROM ${TOOLS_IMAGE} AS node-tools
COPY --from=bins /out/dataplane/ /opt/tickstack/dataplane/
ENV PATH=/opt/tickstack/dataplane/bin:/opt/tickstack/dataplane:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The node agent (a DaemonSet): tunes its own node; runs as root, privileges come from the pod spec.
# The same image runs tickstack-xdpd and its device plugin tickstack-xdpd-plugin (the chart's xdpd
# DaemonSet) and installs the tickstack-xdp CNI plugin (static, it runs on the host) into the node's
# CNI directory.
FROM node-tools AS agent
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title=tickstack-agent org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${COMMIT}
COPY --from=bins /out/bin/agent /out/bin/tickstack-xdp-cni /out/bin/tickstack-xdpd-plugin /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/agent"]

# The benchmark pods: sockperf, the tick-to-trade rig and the bypass stack, driven by the command the
# LatencyBenchmark sets.
FROM node-tools AS bench
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title=tickstack-bench org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${COMMIT}
COPY --from=bins /out/bench-bin/ /usr/local/bin/
CMD ["sleep", "infinity"]
