// Command tickstack-bench-upload copies a benchmark runner's results file into the ConfigMap the
// LatencyBenchmark controller created for that node and run. It runs in the benchmark pod right
// after tickstack-bench, as the pod's service account, which may only get and update that run's
// ConfigMaps:
//
//	tickstack-bench-upload --file=/results/results.json --configmap=NAME --namespace=NS --exit-code=N
//
// It always writes something: the results (key results.json) when the file exists, or why not (key
// error), and the runner's exit code (key exit-code); it then exits with the runner's exit code, so
// the Job's outcome stays the runner's. The document is not parsed here: the controller checks its
// schema and reports a mismatch on the benchmark.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// MaxResultsBytes keeps the document well inside a ConfigMap's 1 MiB and the benchmark status.
const MaxResultsBytes = 900 * 1024

type options struct {
	file, configMap, namespace, kubeconfig string
	exitCode                               int
	timeout                                time.Duration
}

func main() {
	code, err := mainErr(os.Args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tickstack-bench-upload: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func mainErr(args []string, stderr io.Writer) (int, error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return 2, err
	}
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return 1, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 1, fmt.Errorf("building the API client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := Upload(ctx, cs, o, time.Second); err != nil {
		return 1, err
	}
	fmt.Fprintf(stderr, "tickstack-bench-upload: results stored in ConfigMap %s/%s\n", o.namespace, o.configMap)
	return o.exitCode, nil
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("tickstack-bench-upload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.file, "file", "", "the runner's results file (--output of tickstack-bench)")
	fs.StringVar(&o.configMap, "configmap", os.Getenv("RESULTS_CONFIGMAP"), "the results ConfigMap (default $RESULTS_CONFIGMAP)")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "its namespace (default $POD_NAMESPACE)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; default the pod's service account")
	fs.IntVar(&o.exitCode, "exit-code", 0, "the runner's exit code, recorded and returned")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to keep retrying the API server")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q: every option is a --flag", fs.Args())
	case o.file == "":
		return nil, errors.New("--file is required: the runner's results file")
	case o.configMap == "" || o.namespace == "":
		return nil, errors.New("--configmap and --namespace are required (or $RESULTS_CONFIGMAP and $POD_NAMESPACE)")
	}
	return o, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig: %w", err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no in-cluster API access (%w): run inside the benchmark pod or pass --kubeconfig", err)
	}
	return cfg, nil
}

// contents is what goes into the ConfigMap for a results file (missing, too large or present).
func contents(file string, exitCode int) map[string]string {
	data := map[string]string{tsv1.BenchExitCodeKey: strconv.Itoa(exitCode)}
	b, err := os.ReadFile(file)
	switch {
	case err != nil:
		data[tsv1.BenchErrorKey] = fmt.Sprintf("the runner wrote no results file (exit code %d): %v; see the pod log", exitCode, err)
	case len(b) == 0:
		data[tsv1.BenchErrorKey] = fmt.Sprintf("the runner's results file is empty (exit code %d); see the pod log", exitCode)
	case len(b) > MaxResultsBytes:
		data[tsv1.BenchErrorKey] = fmt.Sprintf("the results are %d bytes, more than the %d a ConfigMap holds here: run fewer sizes, rates or patterns per benchmark", len(b), MaxResultsBytes)
	default:
		data[tsv1.BenchResultsKey] = string(b)
	}
	return data
}

// Upload writes the file's contents into the ConfigMap, retrying conflicts and transient API
// errors with backoff (starting at backoff) until ctx ends. Forbidden and NotFound are final: they
// mean the ConfigMap is not this run's.
func Upload(ctx context.Context, cs kubernetes.Interface, o *options, backoff time.Duration) error {
	data := contents(o.file, o.exitCode)
	for {
		err := uploadOnce(ctx, cs, o, data)
		if err == nil {
			return nil
		}
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return fmt.Errorf("storing results in ConfigMap %s/%s: %w (is this pod's service account the benchmark's, and the ConfigMap this run's?)", o.namespace, o.configMap, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storing results in ConfigMap %s/%s: gave up: %w", o.namespace, o.configMap, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 15*time.Second)
	}
}

func uploadOnce(ctx context.Context, cs kubernetes.Interface, o *options, data map[string]string) error {
	cms := cs.CoreV1().ConfigMaps(o.namespace)
	cm, err := cms.Get(ctx, o.configMap, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data = data
	cm.BinaryData = nil
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
