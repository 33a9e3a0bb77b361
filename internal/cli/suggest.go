package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/manifest"
	"github.com/tickstack/tickstack/internal/suggest"
	"github.com/tickstack/tickstack/internal/webhook"
)

// factsHint says how to make a facts file.
const factsHint = "make one with: kubectl get lns NODE -o jsonpath='{.status.facts}' > facts.json"

// SuggestOptions say where the facts come from and how to print the profile.
type SuggestOptions struct {
	suggest.Options
	// File holds the facts (the JSON of a node state's status.facts; "-" is standard input).
	// Empty: read them from the cluster's LatencyNodeState named Node.
	File string
	// Output is yaml (with a comment on each choice) or json.
	Output string
}

// ReadFacts reads a node's facts: exactly the JSON (or YAML) of a LatencyNodeState's
// status.facts. Unknown fields are an error.
func ReadFacts(path string, stdin io.Reader) (*tsv1.NodeFacts, error) {
	raw, err := manifest.ReadRaw(path, stdin)
	if err != nil {
		return nil, fmt.Errorf("reading the facts: %w", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%s is empty (the node's agent has not reported facts?): %s", path, factsHint)
	}
	f := &tsv1.NodeFacts{}
	if err := yaml.UnmarshalStrict(raw, f); err != nil {
		return nil, fmt.Errorf("%s is not a node state's status.facts: %w (%s)", path, err, factsHint)
	}
	if f.OnlineCPUs == "" {
		return nil, fmt.Errorf("%s: onlineCPUs is missing: it is not a node state's status.facts (%s)", path, factsHint)
	}
	return f, nil
}

// SuggestProfile prints a LatencyProfile for one node from its facts: read from o.File, or from
// the node's LatencyNodeState through c. It is checked by the LatencyProfile webhook's own rules
// first; a suggestion they refuse is an error and nothing is printed. Warnings go to errOut.
func SuggestProfile(ctx context.Context, c client.Client, o SuggestOptions, stdin io.Reader, out, errOut io.Writer) error {
	if o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("-o %q: choose yaml or json", o.Output)
	}
	var facts *tsv1.NodeFacts
	var err error
	switch {
	case o.File != "":
		if facts, err = ReadFacts(o.File, stdin); err != nil {
			return err
		}
	case o.Node == "":
		return fmt.Errorf("profile suggest needs --node NAME (facts from the cluster) or -f facts.json (%s)", factsHint)
	default:
		if facts, o.Hostname, err = clusterFacts(ctx, c, o.Node); err != nil {
			return err
		}
	}
	s, err := suggest.Suggest(facts, o.Options)
	if err != nil {
		return err
	}
	warnings, errs := webhook.ValidateProfileSpec(&s.Profile.Spec, field.NewPath("spec"))
	if len(errs) > 0 {
		return fmt.Errorf("the LatencyProfile webhook would refuse the suggestion: %w", errs.ToAggregate())
	}
	for _, w := range warnings {
		fmt.Fprintln(errOut, "warning:", w)
	}
	var b []byte
	if o.Output == "json" {
		b, err = s.JSON()
	} else {
		b, err = s.YAML()
	}
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

// clusterFacts reads the node state's facts and the node's hostname label (its name when the Node
// cannot be read).
func clusterFacts(ctx context.Context, c client.Client, name string) (*tsv1.NodeFacts, string, error) {
	lns := &tsv1.LatencyNodeState{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, lns)
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", fmt.Errorf("no LatencyNodeState %s: the agent reports a node's facts once a profile selects it; "+
			"select the node with a profile that sets only spec.nodeSelector, wait for its facts, and run this again", name)
	case err != nil:
		return nil, "", fmt.Errorf("reading LatencyNodeState %s (is tickstack installed?): %w", name, err)
	case lns.Status.Facts == nil:
		return nil, "", fmt.Errorf("LatencyNodeState %s has no status.facts yet: is tickstack's agent running on that node?", name)
	}
	hostname := name
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err == nil && node.Labels[corev1.LabelHostname] != "" {
		hostname = node.Labels[corev1.LabelHostname]
	}
	return lns.Status.Facts, hostname, nil
}

// NewProfileCmd is `tickstack profile`, with `suggest`.
func NewProfileCmd(newClient func() (client.Client, error)) *cobra.Command {
	o := SuggestOptions{}
	var hugepages string
	suggestCmd := &cobra.Command{
		Use:   "suggest --node NAME | -f facts.json [--node NAME]",
		Short: "Print a LatencyProfile for a node, from the facts its agent reports, each choice explained",
		Long: `Reads a node's facts (its LatencyNodeState's status.facts, or -f facts.json made with
  kubectl get lns NODE -o jsonpath='{.status.facts}' > facts.json)
and prints a LatencyProfile for it: reserved CPUs on the NIC's NUMA node (one core per NUMA node,
SMT siblings together), isolated CPUs for the rest of that node, huge pages there, IRQs on the
reserved CPUs, the NIC group, the node selected by its hostname label. The profile is checked by
the LatencyProfile webhook's own rules before it is printed; exit 1 if they would refuse it.
With -f, --node names the node (nothing is read from the cluster).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if hugepages != "" {
				q, err := resource.ParseQuantity(hugepages)
				if err != nil {
					return fmt.Errorf("--hugepages %q: write a quantity such as 1Gi or 512Mi", hugepages)
				}
				o.Hugepages = q
			}
			var c client.Client
			if o.File == "" {
				var err error
				if c, err = newClient(); err != nil {
					return err
				}
			}
			return SuggestProfile(cmd.Context(), c, o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := suggestCmd.Flags()
	f.StringVar(&o.Node, "node", "", "the node: its facts are read from its LatencyNodeState (with -f: only its name)")
	f.StringVarP(&o.File, "filename", "f", "", "the node's facts: the JSON of its LatencyNodeState's status.facts (- for standard input)")
	f.StringVarP(&o.Output, "output", "o", "yaml", "yaml (with a comment on each choice) or json")
	f.StringVar(&o.Name, "name", "", "the profile's name (default latency-NODE)")
	f.StringToStringVar(&o.Selector, "selector", nil, "select nodes by these labels instead of the node's hostname (KEY=VALUE,...)")
	f.StringSliceVar(&o.NICs, "nic", nil, "use these interfaces instead of the automatic choice")
	f.IntVar(&o.ReservedCores, "reserved-cores", 0, "physical cores to reserve (default one per NUMA node)")
	f.StringVar(&hugepages, "hugepages", "", "huge page memory on the NIC's NUMA node (default 1Gi)")
	profile := &cobra.Command{Use: "profile", Short: "Work with LatencyProfiles: suggest one from a node's facts", SilenceUsage: true, SilenceErrors: true}
	profile.AddCommand(suggestCmd)
	return profile
}
