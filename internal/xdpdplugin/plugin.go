// Package xdpdplugin is the kubelet device plugin of tickstack-xdpd's node socket: it advertises
// tsv1.XDPDResource, many units, healthy while the daemon's socket is there, and answers an
// allocation with a read-only mount of the daemon's socket directory into the container. The
// kubelet adds that mount itself, so the pod spec holds no host path and Pod Security "restricted"
// admits the pod; connect() on a unix socket needs no write access to its mount. The daemon tells
// the pod from the caller's network namespace (dataplane/tools/tickstack-xdpd.c), not from the
// path, so every container gets the same directory. cmd/tickstack-xdpd-plugin runs it beside the
// daemon in the xdpd DaemonSet.
package xdpdplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// SocketName is the daemon's socket in its node directory (TS_XDPD_SOCK_NAME, src/xdpd_proto.h).
const SocketName = "xdp.sock"

// NodeDir is the daemon's node socket directory below its run directory (TS_XDPD_NODE_DIR).
const NodeDir = "node"

// Options configure the plugin; cmd/tickstack-xdpd-plugin sets them from flags.
type Options struct {
	// ResourceName is the extended resource advertised (tsv1.XDPDResource).
	ResourceName string
	// Units is how many containers of the node may hold the resource at once.
	Units int
	// SocketDir is the daemon's node socket directory on the host (<run dir>/node). The plugin reads
	// the socket's presence there too, so its container mounts it at the same path.
	SocketDir string
	// ContainerPath is where a container gets SocketDir (read-only).
	ContainerPath string
	// PluginDir is the kubelet's device plugin directory: its kubelet.sock, and this plugin's socket.
	PluginDir string
	// Endpoint is this plugin's socket name in PluginDir.
	Endpoint string
	// CheckPeriod is how often the daemon's socket and the plugin's own registration are checked.
	CheckPeriod time.Duration
}

// Validate says which option is wrong and how to fix it.
func (o *Options) Validate() error {
	switch {
	case !strings.Contains(o.ResourceName, "/"):
		return fmt.Errorf("--resource-name %q must be an extended resource name such as tickstack.io/xdpd", o.ResourceName)
	case o.Units < 1 || o.Units > 10000:
		return fmt.Errorf("--units %d must be from 1 to 10000: how many containers of a node may use the daemon at once", o.Units)
	case !filepath.IsAbs(o.SocketDir):
		return fmt.Errorf("--socket-dir %q must be an absolute path: tickstack-xdpd's <run dir>/node", o.SocketDir)
	case !filepath.IsAbs(o.ContainerPath):
		return fmt.Errorf("--container-path %q must be an absolute path", o.ContainerPath)
	case !filepath.IsAbs(o.PluginDir):
		return fmt.Errorf("--plugin-dir %q must be an absolute path: the kubelet's <root dir>/device-plugins", o.PluginDir)
	case o.Endpoint == "" || strings.Contains(o.Endpoint, "/"):
		return fmt.Errorf("--endpoint %q must be a file name in --plugin-dir", o.Endpoint)
	case o.CheckPeriod <= 0:
		return fmt.Errorf("--check-period %s must be positive", o.CheckPeriod)
	}
	return nil
}

// Plugin serves the device plugin API for one resource.
type Plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	opts Options
	log  logr.Logger

	mu      sync.Mutex
	healthy bool
	// changed is closed (and replaced) when healthy changes: every ListAndWatch stream sends again.
	changed chan struct{}
}

// New returns a plugin for valid options.
func New(opts Options, log logr.Logger) (*Plugin, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Plugin{opts: opts, log: log, changed: make(chan struct{})}, nil
}

// daemonServes reports whether the daemon's node socket is there.
func (p *Plugin) daemonServes() bool {
	st, err := os.Lstat(filepath.Join(p.opts.SocketDir, SocketName))
	return err == nil && st.Mode()&os.ModeSocket != 0
}

// checkHealth updates healthy from the daemon's socket; true when it changed.
func (p *Plugin) checkHealth() bool {
	h := p.daemonServes()
	p.mu.Lock()
	defer p.mu.Unlock()
	if h == p.healthy {
		return false
	}
	p.healthy = h
	close(p.changed)
	p.changed = make(chan struct{})
	return true
}

func (p *Plugin) devices() ([]*pluginapi.Device, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	health := pluginapi.Unhealthy
	if p.healthy {
		health = pluginapi.Healthy
	}
	devs := make([]*pluginapi.Device, p.opts.Units)
	for i := range devs {
		devs[i] = &pluginapi.Device{ID: fmt.Sprintf("xdpd-%d", i), Health: health}
	}
	return devs, p.changed
}

// GetDevicePluginOptions: no PreStartContainer, no preferred allocation.
func (p *Plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the units, and again whenever the daemon's socket comes or goes.
func (p *Plugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	for {
		devs, changed := p.devices()
		if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-s.Context().Done():
			return nil
		}
	}
}

// Allocate gives each container the daemon's socket directory, read-only: connecting needs no
// write access, and the container can change nothing there.
func (p *Plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Mounts: []*pluginapi.Mount{{ContainerPath: p.opts.ContainerPath, HostPath: p.opts.SocketDir, ReadOnly: true}},
		})
	}
	return resp, nil
}

// GetPreferredAllocation is not used (GetDevicePluginOptions does not ask for it).
func (p *Plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

// PreStartContainer is not used.
func (p *Plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// Run serves and registers with the kubelet until ctx ends. The kubelet removes every plugin's
// socket when it restarts: then the plugin serves anew and registers again.
func (p *Plugin) Run(ctx context.Context) error {
	sock := filepath.Join(p.opts.PluginDir, p.opts.Endpoint)
	tick := time.NewTicker(p.opts.CheckPeriod)
	defer tick.Stop()
	for {
		p.checkHealth()
		srv, err := p.serve(sock)
		if err != nil {
			return err
		}
		if err := p.register(ctx); err != nil {
			p.log.Error(err, "registering with the kubelet; retrying", "period", p.opts.CheckPeriod)
		} else {
			p.log.Info("registered with the kubelet", "resource", p.opts.ResourceName, "units", p.opts.Units,
				"socketDir", p.opts.SocketDir, "daemonServes", p.daemonServes())
			p.watch(ctx, tick.C, sock)
		}
		srv.Stop()
		_ = os.Remove(sock)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// watch follows the daemon's socket until ctx ends or the plugin's own socket goes (the kubelet
// restarted: the caller serves and registers again).
func (p *Plugin) watch(ctx context.Context, tick <-chan time.Time, sock string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		if p.checkHealth() {
			p.log.Info("tickstack-xdpd's socket changed", "daemonServes", p.daemonServes())
		}
		if _, err := os.Lstat(sock); err != nil {
			p.log.Info("the plugin's socket is gone (the kubelet restarted): registering again")
			return
		}
	}
}

func (p *Plugin) serve(sock string) (*grpc.Server, error) {
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing the old plugin socket %s: %w", sock, err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("plugin socket %s: %w (is --plugin-dir the kubelet's device-plugins directory, mounted writable?)", sock, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}

func (p *Plugin) register(ctx context.Context) error {
	kubelet := filepath.Join(p.opts.PluginDir, filepath.Base(pluginapi.KubeletSocket))
	conn, err := grpc.NewClient("unix://"+kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("kubelet socket %s: %w", kubelet, err)
	}
	defer func() { _ = conn.Close() }()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(rctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     p.opts.Endpoint,
		ResourceName: p.opts.ResourceName,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	if err != nil {
		return fmt.Errorf("registering %s at %s: %w", p.opts.ResourceName, kubelet, err)
	}
	return nil
}
