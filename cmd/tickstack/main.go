// Command tickstack is the user's and CI's tool: check objects offline, plan a profile's effect
// before applying it, run a LatencyBenchmark and wait for its verdict, write a benchmark's HTML
// report. Installed as kubectl-tickstack on the PATH it is the kubectl plugin `kubectl tickstack`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/cli"
	"github.com/tickstack/tickstack/internal/qualify"
	"github.com/tickstack/tickstack/internal/version"
)

func main() {
	if err := newRoot(filepath.Base(os.Args[0])).ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "tickstack:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is the exit status of a failed command: 2 for a failed benchmark or an Unsupported
// interface, 3 for an inconclusive benchmark or a Degraded interface, else 1.
func exitCode(err error) int {
	var qv *qualify.VerdictError
	if errors.As(err, &qv) && qv.Verdict == tsv1.QualifyDegraded {
		return 3 // qualify: Degraded
	}
	if errors.As(err, &qv) {
		return 2 // qualify: Unsupported
	}
	var verdict *cli.VerdictError
	if errors.As(err, &verdict) && verdict.Verdict != tsv1.VerdictFailed {
		return 3 // Inconclusive: something a threshold needs was not measured
	}
	if errors.As(err, &verdict) {
		return 2 // Failed: a node did not meet the thresholds
	}
	return 1
}

// newRoot builds the command tree; program is the name it was run as: as kubectl-tickstack (a kubectl
// plugin) its usage and completion say "kubectl tickstack".
func newRoot(program string) *cobra.Command {
	var kubeconfig, kubecontext string
	root := &cobra.Command{
		Use:           "tickstack",
		Short:         "Check, plan, run and read tickstack's low-latency node tuning",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	if strings.HasPrefix(program, "kubectl-") {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl " + strings.TrimPrefix(program, "kubectl-")}
	}
	root.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	root.PersistentFlags().StringVar(&kubecontext, "context", "", "kubeconfig context to use")
	loader := func() clientcmd.ClientConfig {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = kubeconfig
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubecontext})
	}
	namespace := func(flag string) string {
		if flag != "" {
			return flag
		}
		if ns, _, err := loader().Namespace(); err == nil && ns != "" {
			return ns
		}
		return "default"
	}
	newClient := func() (client.Client, error) {
		cfg, err := loader().ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
		scheme := runtime.NewScheme()
		utilruntime.Must(clientgoscheme.AddToScheme(scheme))
		utilruntime.Must(tsv1.AddToScheme(scheme))
		return client.New(cfg, client.Options{Scheme: scheme})
	}

	var file, output string
	planCmd := &cobra.Command{
		Use:   "plan -f PROFILE.yaml",
		Short: "Show which nodes each profile of a file would change, how, and which would reboot; writes nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return fmt.Errorf("plan needs -f PROFILE.yaml (or -f - for standard input)")
			}
			if err := cli.CheckOutput(output); err != nil {
				return err
			}
			profiles, err := cli.ReadProfiles(cmd.Context(), file, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			return cli.PlanAll(cmd.Context(), c, profiles, output, cmd.OutOrStdout())
		},
	}
	planCmd.Flags().StringVarP(&file, "filename", "f", "", "the LatencyProfiles to plan, one or more YAML documents (- for standard input)")
	planCmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml: the plans as data, one per profile (default: text)")
	root.AddCommand(planCmd, newValidateCmd())
	root.AddCommand(newBenchCmd(newClient, namespace), newReportCmd(newClient, namespace))
	root.AddCommand(cli.NewProfileCmd(newClient))
	root.AddCommand(cli.NewNodeCmd(newClient))
	root.AddCommand(newQualifyCmd(), newQualifyPeerCmd())
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print tickstack's release, git commit and build time",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "tickstack "+version.Get().String())
			return err
		},
	})
	return root
}

func newBenchCmd(newClient func() (client.Client, error), namespace func(string) string) *cobra.Command {
	var file, ns, output string
	o := cli.BenchOptions{}
	noWait := false
	cmd := &cobra.Command{
		Use:   "bench [NAME | -f BENCHMARK.yaml]",
		Short: "Run a LatencyBenchmark (create it or rerun it), wait, print its tables; exit 2 if it failed, 3 if inconclusive",
		Long: `Creates the LatencyBenchmark of -f (or updates its spec), or reruns the existing benchmark NAME,
shows each node's progress, waits for the run, prints every node's tables in the papers' shape, the
kernel vs bypass ratios and the verdict with its reasons. Exit codes: 0 passed, 1 error, 2 failed,
3 inconclusive (0 with --allow-inconclusive). For CI: tickstack bench -f bench.yaml --timeout 30m`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.CheckOutput(output); err != nil {
				return err
			}
			var benchmarks []*tsv1.LatencyBenchmark
			switch {
			case file != "" && len(args) > 0:
				return fmt.Errorf("give NAME or -f FILE, not both")
			case file != "":
				bs, err := cli.ReadBenchmarks(cmd.Context(), file, cmd.InOrStdin())
				if err != nil {
					return err
				}
				benchmarks = bs
			case len(args) == 1:
				o.Name = args[0]
			default:
				return fmt.Errorf("bench needs NAME (an existing benchmark) or -f BENCHMARK.yaml")
			}
			o.Namespace, o.Wait = namespace(ns), !noWait
			c, err := newClient()
			if err != nil {
				return err
			}
			return cli.BenchAll(cmd.Context(), c, o, benchmarks, output, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the LatencyBenchmarks to create or update and run, in order, one or more YAML documents (- for standard input)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml: the benchmarks with their results and verdicts as data (progress goes to standard error; default: text)")
	cmd.Flags().StringVarP(&ns, "namespace", "n", "", "namespace (default: the kubeconfig's, else default)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", time.Hour, "how long to wait for the run")
	cmd.Flags().DurationVar(&o.Poll, "poll", 2*time.Second, "how often to read the status")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the run started")
	cmd.Flags().BoolVar(&o.AllowInconclusive, "allow-inconclusive", false, "exit 0 on an Inconclusive verdict")
	return cmd
}

func newReportCmd(newClient func() (client.Client, error), namespace func(string) string) *cobra.Command {
	var ns, output string
	cmd := &cobra.Command{
		Use:   "report NAME -o report.html",
		Short: "Write a LatencyBenchmark's self-contained HTML report (tables and SVG plots)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return fmt.Errorf("report needs -o FILE.html (or -o - for standard output)")
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			return cli.Report(cmd.Context(), c, namespace(ns), args[0], output, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "the HTML file to write (- for standard output)")
	cmd.Flags().StringVarP(&ns, "namespace", "n", "", "namespace (default: the kubeconfig's, else default)")
	return cmd
}

func newValidateCmd() *cobra.Command {
	var files []string
	var output string
	cmd := &cobra.Command{
		Use:   "validate -f FILE|-",
		Short: "Check every LatencyProfile, LatencyBenchmark and BMC of a file offline, as the API server and the operator would",
		Long: `Checks every document of each file without a cluster (no kubeconfig is read): unknown and
duplicate fields, the CRDs' OpenAPI schema and CEL rules (run by the API server's own code on the CRDs
this release installs), and the rules the operator applies beyond them (the LatencyProfile webhook's,
the LatencyBenchmark controller's). Each problem is printed with its field path and the document
(position, kind and name). Exit code 1 when a document is invalid.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(output); err != nil {
				return err
			}
			return cli.Validate(cmd.Context(), files, cmd.InOrStdin(), output, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "a file of one or more YAML or JSON documents (- for standard input); repeat for more files")
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml: one result per document as data (default: text)")
	return cmd
}
