package xdpdplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// kubelet is the kubelet's side of registration: it records each request, as the kubelet's
// device manager receives it on kubelet.sock.
type kubelet struct {
	pluginapi.UnimplementedRegistrationServer
	reqs chan *pluginapi.RegisterRequest
}

func (k *kubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.reqs <- r
	return &pluginapi.Empty{}, nil
}

func startKubelet(t *testing.T, dir string) *kubelet {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{reqs: make(chan *pluginapi.RegisterRequest, 4)}
	s := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(s, k)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return k
}

func (k *kubelet) registered(t *testing.T) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case r := <-k.reqs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin did not register with the kubelet")
		return nil
	}
}

func testOptions(t *testing.T) Options {
	// short paths: a unix socket's path has at most 107 bytes
	base, err := os.MkdirTemp("", "xdpdp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	o := Options{ResourceName: "tickstack.io/xdpd", Units: 3, SocketDir: filepath.Join(base, "node"),
		ContainerPath: "/run/tickstack", PluginDir: filepath.Join(base, "dp"), Endpoint: "tickstack-xdpd.sock",
		CheckPeriod: 20 * time.Millisecond}
	for _, d := range []string{o.SocketDir, o.PluginDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func TestOptionsNameTheFlag(t *testing.T) {
	good := Options{ResourceName: "tickstack.io/xdpd", Units: 1, SocketDir: "/run/tickstack/xdp/node",
		ContainerPath: "/run/tickstack", PluginDir: "/var/lib/kubelet/device-plugins", Endpoint: "x.sock", CheckPeriod: time.Second}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	for flag, bad := range map[string]func(*Options){
		"--resource-name":  func(o *Options) { o.ResourceName = "xdpd" },
		"--units":          func(o *Options) { o.Units = 0 },
		"--socket-dir":     func(o *Options) { o.SocketDir = "node" },
		"--container-path": func(o *Options) { o.ContainerPath = "" },
		"--plugin-dir":     func(o *Options) { o.PluginDir = "dp" },
		"--endpoint":       func(o *Options) { o.Endpoint = "a/b.sock" },
		"--check-period":   func(o *Options) { o.CheckPeriod = 0 },
	} {
		o := good
		bad(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: got %v, want an error naming it", flag, err)
		}
	}
}

// The plugin registers, advertises its units unhealthy until the daemon's socket is there, mounts
// the socket directory read-only into each container, and registers again when the kubelet
// restarts (removing every plugin socket).
func TestPluginRegistersAdvertisesAndMounts(t *testing.T) {
	o := testOptions(t)
	k := startKubelet(t, o.PluginDir)
	p, err := New(o, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	r := k.registered(t)
	if r.Version != pluginapi.Version || r.ResourceName != o.ResourceName || r.Endpoint != o.Endpoint {
		t.Fatalf("registration %+v", r)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(o.PluginDir, o.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	c := pluginapi.NewDevicePluginClient(conn)
	lw, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	health := func() string {
		t.Helper()
		resp, err := lw.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Devices) != o.Units {
			t.Fatalf("%d devices, want %d", len(resp.Devices), o.Units)
		}
		h := resp.Devices[0].Health
		for _, d := range resp.Devices {
			if d.Health != h {
				t.Fatalf("mixed health: %v", resp.Devices)
			}
		}
		return h
	}
	if h := health(); h != pluginapi.Unhealthy {
		t.Fatalf("no daemon socket yet, but the units are %s", h)
	}

	// the daemon starts serving
	l, err := net.Listen("unixpacket", filepath.Join(o.SocketDir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	if h := health(); h != pluginapi.Healthy {
		t.Fatalf("the daemon serves, but the units are %s", h)
	}
	ar, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"xdpd-0"}}, {DevicesIds: []string{"xdpd-1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ar.ContainerResponses) != 2 {
		t.Fatalf("%d container responses, want 2", len(ar.ContainerResponses))
	}
	for _, cr := range ar.ContainerResponses {
		if len(cr.Mounts) != 1 || cr.Mounts[0].HostPath != o.SocketDir || cr.Mounts[0].ContainerPath != o.ContainerPath || !cr.Mounts[0].ReadOnly {
			t.Fatalf("mounts %v, want %s at %s read-only", cr.Mounts, o.SocketDir, o.ContainerPath)
		}
		if len(cr.Devices) != 0 || len(cr.Envs) != 0 {
			t.Fatalf("a container gets only the mount: %v", cr)
		}
	}

	// the daemon stops
	_ = l.Close()
	_ = os.Remove(filepath.Join(o.SocketDir, SocketName))
	if h := health(); h != pluginapi.Unhealthy {
		t.Fatalf("the daemon stopped, but the units are %s", h)
	}

	// the kubelet restarts: it removes every plugin socket
	if err := os.Remove(filepath.Join(o.PluginDir, o.Endpoint)); err != nil {
		t.Fatal(err)
	}
	if r := k.registered(t); r.ResourceName != o.ResourceName {
		t.Fatalf("registration after the kubelet's restart %+v", r)
	}
	if _, err := os.Stat(filepath.Join(o.PluginDir, o.Endpoint)); err != nil {
		t.Fatalf("the plugin serves no socket after registering again: %v", err)
	}
}
