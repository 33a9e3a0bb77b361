// Command tickstack-xdpd-plugin is the kubelet device plugin of tickstack-xdpd's node socket
// (internal/xdpdplugin): it runs beside the daemon in the xdpd DaemonSet's pod, advertises
// tickstack.io/xdpd (many units, healthy while the daemon serves) and answers an allocation with a
// read-only mount of the daemon's <run dir>/node into the container at /run/tickstack. The pod
// webhook requests one unit for a bypass container instead of a hostPath volume, so a bypass pod
// runs under Pod Security "restricted". It talks to no API server; it needs the kubelet's
// device-plugins directory (to register and serve its socket) and the daemon's node directory
// read-only (to see whether the daemon serves).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/version"
	"github.com/tickstack/tickstack/internal/xdpdplugin"
)

// defaultRunDir is tickstack-xdpd's default --run-dir (internal/render.DefaultXDPRunDir).
const defaultRunDir = "/run/tickstack/xdp"

func main() {
	o := xdpdplugin.Options{}
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	rs := string(tsv1.XDPDResource)
	fs.StringVar(&o.ResourceName, "resource-name", rs, "the extended resource advertised (the pod webhook requests "+rs+")")
	fs.IntVar(&o.Units, "units", 1000, "units advertised: how many containers of the node may use tickstack-xdpd at once")
	fs.StringVar(&o.SocketDir, "socket-dir", filepath.Join(defaultRunDir, xdpdplugin.NodeDir), "tickstack-xdpd's node socket directory (<run dir>/node), the same path on the host and in this container")
	fs.StringVar(&o.ContainerPath, "container-path", "/run/tickstack", "where a container gets the socket directory, read-only (the webhook's TICKSTACK_XDPD_SOCKET is <this>/xdp.sock)")
	fs.StringVar(&o.PluginDir, "plugin-dir", pluginapi.DevicePluginPath, "the kubelet's device plugin directory, as this container mounts it")
	fs.StringVar(&o.Endpoint, "endpoint", "tickstack-xdpd.sock", "this plugin's socket name in --plugin-dir")
	fs.DurationVar(&o.CheckPeriod, "check-period", 5*time.Second, "how often the daemon's socket and the plugin's registration are checked")
	zo := zap.Options{}
	zo.BindFlags(fs)
	_ = fs.Parse(os.Args[1:])
	log := zap.New(zap.UseFlagOptions(&zo)).WithName("tickstack-xdpd-plugin")
	if err := run(o, log); err != nil {
		fmt.Fprintln(os.Stderr, "tickstack-xdpd-plugin:", err)
		os.Exit(1)
	}
}

func run(o xdpdplugin.Options, log logr.Logger) error {
	p, err := xdpdplugin.New(o, log)
	if err != nil {
		return err
	}
	log.Info("starting", version.Get().KeysAndValues()...)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return p.Run(ctx)
}
