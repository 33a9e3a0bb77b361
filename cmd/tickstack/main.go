// Command tickstack is the user's and CI's tool: plan a profile's effect before applying it.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/cli"
)

func main() {
	if err := newRoot().ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "tickstack:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	var kubeconfig, kubecontext string
	root := &cobra.Command{
		Use:           "tickstack",
		Short:         "Plan, run and read tickstack's low-latency node tuning",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	root.PersistentFlags().StringVar(&kubecontext, "context", "", "kubeconfig context to use")
	newClient := func() (client.Client, error) {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = kubeconfig
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubecontext}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
		scheme := runtime.NewScheme()
		utilruntime.Must(clientgoscheme.AddToScheme(scheme))
		utilruntime.Must(tsv1.AddToScheme(scheme))
		return client.New(cfg, client.Options{Scheme: scheme})
	}

	var file string
	planCmd := &cobra.Command{
		Use:   "plan -f PROFILE.yaml",
		Short: "Show which nodes a profile would change, how, and which would reboot; writes nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return fmt.Errorf("plan needs -f PROFILE.yaml (or -f - for standard input)")
			}
			p, err := cli.ReadProfile(file, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			_, err = cli.Plan(cmd.Context(), c, p, cmd.OutOrStdout())
			return err
		},
	}
	planCmd.Flags().StringVarP(&file, "filename", "f", "", "the LatencyProfile to plan")
	root.AddCommand(planCmd)
	return root
}
