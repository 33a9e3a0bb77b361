package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/tickstack/tickstack/internal/manifest"
)

// Validate checks every document of the files offline (no cluster, no kubeconfig) against the
// CRDs' schema and CEL rules and the operator's own rules, and writes one result per document: text
// naming each document and every problem with its field path, or -o json|yaml. It returns an error
// when a file cannot be read or is empty, or a document is invalid.
func Validate(ctx context.Context, files []string, stdin io.Reader, output string, out io.Writer) error {
	if len(files) == 0 {
		return fmt.Errorf("validate needs -f FILE (or -f - for standard input)")
	}
	v, err := manifest.NewValidator()
	if err != nil {
		return err
	}
	var results []manifest.Result
	for _, f := range files {
		docs, err := manifest.ReadFile(f, stdin)
		if err != nil {
			return err
		}
		for _, d := range docs {
			results = append(results, v.Check(ctx, d))
		}
	}
	invalid := 0
	for _, r := range results {
		if !r.Valid {
			invalid++
		}
	}
	if output != OutputText {
		if err := writeAs(out, output, results); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			if r.Valid {
				fmt.Fprintf(out, "%s: valid\n", r)
			} else {
				fmt.Fprintf(out, "%s: invalid\n", r)
			}
			for _, p := range r.Errors {
				fmt.Fprintf(out, "  %s\n", p)
			}
			for _, w := range r.Warnings {
				fmt.Fprintf(out, "  warning: %s\n", w)
			}
		}
	}
	if invalid > 0 {
		return fmt.Errorf("%d of %d objects are invalid", invalid, len(results))
	}
	return nil
}
