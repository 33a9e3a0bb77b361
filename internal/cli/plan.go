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

// ReadProfile reads one LatencyProfile from a YAML or JSON file ("-" is standard input). Unknown
// fields are an error, so a typo never silently drops a setting.
func ReadProfile(path string, stdin io.Reader) (*tsv1.LatencyProfile, error) {
	p := &tsv1.LatencyProfile{}
	if err := readObject(path, stdin, "profile", p); err != nil {
		return nil, err
	}
	return p, nil
}

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
