package manifest

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Decode checks a document and converts it into out, whose Go type names the one kind the command
// takes (cmd, for example "plan"). It refuses, naming the document, a document that is no object,
// of another kind, or invalid.
func (v *Validator) Decode(ctx context.Context, d Document, cmd string, out client.Object) error {
	want := reflect.TypeOf(out).Elem().Name()
	if d.Err != nil {
		return fmt.Errorf("%s: %w", d, d.Err)
	}
	if got := d.Object.GetKind(); got != want {
		if got == "" {
			got = "no kind"
		}
		return fmt.Errorf("%s: %s takes %s, not %s", d, cmd, want, got)
	}
	r := v.Check(ctx, d)
	if err := r.Err(); err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object.Object, out); err != nil {
		return fmt.Errorf("%s: %w", d, err)
	}
	return nil
}
