package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/manifest"
)

// ReadProfiles reads the LatencyProfiles of a YAML or JSON file of one or more documents ("-" is
// standard input) and checks each offline as `tickstack validate` does. A document that is not a
// valid LatencyProfile is refused, named by its position, kind and name; an empty file is refused.
func ReadProfiles(ctx context.Context, path string, stdin io.Reader) ([]*tsv1.LatencyProfile, error) {
	return readAll(ctx, path, stdin, "plan", func() *tsv1.LatencyProfile { return &tsv1.LatencyProfile{} })
}

// ReadBenchmarks reads the LatencyBenchmarks of a file as ReadProfiles reads profiles.
func ReadBenchmarks(ctx context.Context, path string, stdin io.Reader) ([]*tsv1.LatencyBenchmark, error) {
	return readAll(ctx, path, stdin, "bench", func() *tsv1.LatencyBenchmark { return &tsv1.LatencyBenchmark{} })
}

func readAll[T client.Object](ctx context.Context, path string, stdin io.Reader, cmd string, newObj func() T) ([]T, error) {
	docs, err := manifest.ReadFile(path, stdin)
	if err != nil {
		return nil, err
	}
	v, err := manifest.NewValidator()
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(docs))
	for _, d := range docs {
		obj := newObj()
		if err := v.Decode(ctx, d, cmd, obj); err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// Output formats of -o.
const (
	OutputText = ""
	OutputJSON = "json"
	OutputYAML = "yaml"
)

// CheckOutput refuses an -o value other than json and yaml.
func CheckOutput(o string) error {
	switch o {
	case OutputText, OutputJSON, OutputYAML:
		return nil
	}
	return fmt.Errorf("-o %q: give json or yaml (or leave -o out for text)", o)
}

// writeAs writes v as JSON or YAML.
func writeAs(out io.Writer, format string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == OutputYAML {
		if raw, err = yaml.JSONToYAML(raw); err != nil {
			return err
		}
	} else {
		raw = append(raw, '\n')
	}
	_, err = out.Write(raw)
	return err
}
