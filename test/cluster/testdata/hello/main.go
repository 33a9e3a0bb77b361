// Command hello is the stand-in binary the cluster tests put in the manager, agent and bench images
// until the real ones exist: it proves an image built by hack/images/build.sh runs on the local
// cluster, and that an in-cluster client reaches the API server through its Service.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

func main() {
	fmt.Println("hello from a locally built tickstack image")
	if err := apiVersion(); err != nil {
		fmt.Println("apiserver: error:", err)
	}
	if len(os.Args) > 1 && os.Args[1] == "wait" {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
	}
}

// apiVersion reads /version with the pod's service account, the way the operator and the agent will.
func apiVersion() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/version", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	fmt.Printf("apiserver: %s via %s\n", v.GitVersion, cfg.Host)
	return nil
}
