// Package cli holds the tickstack command's subcommands, each taking its client and output so that
// tests run them against a real API server.
package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/plan"
)

// Plan validates the profile with the API server (a dry run: nothing is written), then prints which
// nodes would change, how, and which would reboot. It returns the plan for callers that want it.
func Plan(ctx context.Context, c client.Client, p *tsv1.LatencyProfile, out io.Writer) (*plan.Plan, error) {
	if err := dryRun(ctx, c, p); err != nil {
		return nil, err
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var profiles tsv1.LatencyProfileList
	if err := c.List(ctx, &profiles); err != nil {
		return nil, fmt.Errorf("listing profiles (is tickstack installed?): %w", err)
	}
	var states tsv1.LatencyNodeStateList
	if err := c.List(ctx, &states); err != nil {
		return nil, fmt.Errorf("listing node states: %w", err)
	}
	pl, err := plan.Compute(p, nodes.Items, profiles.Items, states.Items)
	if err != nil {
		return nil, err
	}
	if p.Spec.BIOS != nil {
		planBIOS(ctx, c, p, nodes.Items, pl)
	}
	pl.Schedule(p.Spec.Rollout, nodes.Items, time.Now())
	pl.Print(out)
	return pl, nil
}

// dryRun sends the profile through the API server's validation (schema, CEL, webhook) without
// storing it: as a create when it is new, as an update when a profile of that name exists.
func dryRun(ctx context.Context, c client.Client, p *tsv1.LatencyProfile) error {
	obj := p.DeepCopy()
	existing := &tsv1.LatencyProfile{}
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case apierrors.IsNotFound(err):
		err = c.Create(ctx, obj, client.DryRunAll)
	case err != nil:
		return fmt.Errorf("reading profile %s (is tickstack installed?): %w", p.Name, err)
	default:
		obj.ResourceVersion = existing.ResourceVersion
		err = c.Update(ctx, obj, client.DryRunAll)
	}
	if err != nil {
		return fmt.Errorf("the API server refuses the profile: %w", err)
	}
	return nil
}

// PlanAll plans each profile in turn (the documents of one file) and writes the plans as text, or
// as a JSON or YAML list with output json|yaml.
func PlanAll(ctx context.Context, c client.Client, profiles []*tsv1.LatencyProfile, output string, out io.Writer) error {
	text := out
	if output != OutputText {
		text = io.Discard
	}
	plans := make([]*plan.Plan, 0, len(profiles))
	for i, p := range profiles {
		if i > 0 {
			fmt.Fprintln(text)
		}
		pl, err := Plan(ctx, c, p, text)
		if err != nil {
			return fmt.Errorf("profile %s: %w", p.Name, err)
		}
		plans = append(plans, pl)
	}
	if output == OutputText {
		return nil
	}
	return writeAs(out, output, plans)
}
