package integration

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tickstack/tickstack/internal/agent/agenttest"
)

// restCfg reaches the envtest API server the tests of this package share.
var restCfg *rest.Config

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false), zap.Level(zapcore.ErrorLevel)))
	cfg, stop, err := agenttest.StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		os.Exit(1)
	}
	restCfg = cfg
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}
