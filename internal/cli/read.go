package cli

import (
	"fmt"
	"io"
	"os"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// readObject reads one tickstack object from a YAML or JSON file ("-" is standard input) into obj,
// whose Go type names the kind it must declare; what names it in errors ("profile"). Unknown fields
// are an error, so a typo never silently drops a setting.
func readObject(path string, stdin io.Reader, what string, obj client.Object) error {
	raw, err := readInput(path, stdin)
	if err != nil {
		return fmt.Errorf("reading the %s: %w", what, err)
	}
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	kind := reflect.TypeOf(obj).Elem().Name()
	tm, ok := obj.GetObjectKind().(*metav1.TypeMeta)
	if !ok {
		return fmt.Errorf("%s: %T carries no TypeMeta", path, obj)
	}
	if tm.Kind != kind || tm.APIVersion != tsv1.GroupVersion.String() {
		return fmt.Errorf("%s: want kind %s, apiVersion %s; got kind %q, apiVersion %q", path, kind, tsv1.GroupVersion, tm.Kind, tm.APIVersion)
	}
	if obj.GetName() == "" {
		return fmt.Errorf("%s: metadata.name is missing", path)
	}
	return nil
}

// readInput reads a file, or standard input for "-".
func readInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}
