package main

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tickstack/tickstack/internal/version"
)

// TestDefaultImagesAreBuilt checks that the manager's image defaults name images an install has:
// the chart's default registry and image names, tagged with this binary's release (the tag the
// image build gives them). They once named localhost/tickstack/agent:dev, which no build makes.
func TestDefaultImagesAreBuilt(t *testing.T) {
	raw, err := os.ReadFile("../../charts/tickstack/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		ImageRegistry string `json:"imageRegistry"`
		Agent         struct {
			Image string `json:"image"`
		} `json:"agent"`
		Bench struct {
			Image string `json:"image"`
		} `json:"bench"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("charts/tickstack/values.yaml: %v", err)
	}
	tag := ":" + version.Get().Version
	for name, want := range map[string]string{
		"agent": values.ImageRegistry + "/" + values.Agent.Image + tag,
		"bench": values.ImageRegistry + "/" + values.Bench.Image + tag,
	} {
		if got := defaultImage(name); got != want || values.ImageRegistry == "" {
			t.Errorf("defaultImage(%q) = %q, the chart installs %q", name, got, want)
		}
	}
}
