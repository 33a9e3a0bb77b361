// Package manifest reads files of tickstack objects (YAML or JSON, several documents) and checks each
// object without a cluster: against the CRDs' own OpenAPI schema and CEL rules, run by the API
// server's code (k8s.io/apiextensions-apiserver), and against the rules the operator's webhook and
// controllers apply beyond them (the same functions they call).
package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Document is one non-empty YAML or JSON document of a file.
type Document struct {
	// File is the file's name as given ("-" for standard input).
	File string
	// Index counts the file's non-empty documents from 1.
	Index int
	// Item counts from 1 the items of a document that is a List (kind List, as kubectl get -o yaml
	// writes several objects); 0 for a document that is one object.
	Item int
	// Object is the document's object; nil when Err is set.
	Object *unstructured.Unstructured
	// Err says why the document is no object (not YAML, a list or a scalar, duplicate keys).
	Err error
}

// String names the document as messages do: "FILE document 2 (LatencyProfile trading)".
func (d Document) String() string {
	s := fmt.Sprintf("%s document %d", d.File, d.Index)
	if d.Item > 0 {
		s += fmt.Sprintf(" item %d", d.Item)
	}
	if d.Object != nil {
		kind, name := d.Object.GetKind(), d.Object.GetName()
		switch {
		case kind == "":
			kind = "(no kind)"
		case d.Object.GetNamespace() != "":
			name = d.Object.GetNamespace() + "/" + name
		}
		if name == "" {
			name = "(no name)"
		}
		s += fmt.Sprintf(" (%s %s)", kind, name)
	}
	return s
}

// ReadFile reads every document of path ("-" is stdin). A file that cannot be read, or that holds
// no document at all, is an error; a document that is not an object is a Document with Err set, so
// that callers name it and never skip it.
func ReadFile(path string, stdin io.Reader) ([]Document, error) {
	raw, err := ReadRaw(path, stdin)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	docs := Split(path, raw)
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s is empty: it holds no YAML or JSON document; give a LatencyProfile, LatencyBenchmark or BMC", path)
	}
	return docs, nil
}

// ReadRaw reads a file, or stdin for "-".
func ReadRaw(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}

// Split cuts raw into its documents (separated by "---" lines), dropping empty ones (only
// whitespace or comments).
func Split(file string, raw []byte) []Document {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs []Document
	for {
		chunk, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		d := Document{File: file, Index: len(docs) + 1}
		if err != nil {
			d.Err = fmt.Errorf("not YAML: %w", err)
			return append(docs, d)
		}
		obj, empty, err := decode(chunk)
		if empty {
			continue
		}
		d.Object, d.Err = obj, err
		docs = append(docs, items(d)...)
	}
}

// decode turns one document into an object, numbers as the API server decodes them (int64 when
// integral). Duplicate keys are an error, as in the API server's strict decoding.
func decode(chunk []byte) (obj *unstructured.Unstructured, empty bool, err error) {
	js, err := yaml.YAMLToJSONStrict(chunk)
	if err != nil {
		if _, lax := yaml.YAMLToJSON(chunk); lax == nil {
			return nil, false, fmt.Errorf("duplicate field: %w", err)
		}
		return nil, false, fmt.Errorf("not YAML or JSON: %w", err)
	}
	js = bytes.TrimSpace(js)
	if string(js) == "null" || len(js) == 0 {
		return nil, true, nil
	}
	var v any
	if err := utiljson.Unmarshal(js, &v); err != nil {
		return nil, false, fmt.Errorf("not YAML or JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false, fmt.Errorf("not an object: a document must be a mapping with apiVersion, kind, metadata and spec, not %s", describe(v))
	}
	return &unstructured.Unstructured{Object: m}, false, nil
}

func describe(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}

// items expands a List document (kind List with items, as kubectl get -o yaml writes several
// objects) into one document per item; any other document is returned as it is.
func items(d Document) []Document {
	if d.Object == nil || d.Object.GetKind() != "List" || !d.Object.IsList() {
		return []Document{d}
	}
	list, ok := d.Object.Object["items"].([]any)
	if !ok {
		return []Document{d}
	}
	out := make([]Document, 0, len(list))
	for i, it := range list {
		item := Document{File: d.File, Index: d.Index, Item: i + 1}
		if m, ok := it.(map[string]any); ok {
			item.Object = &unstructured.Unstructured{Object: m}
		} else {
			item.Err = fmt.Errorf("not an object: a List's items must be mappings with apiVersion, kind, metadata and spec, not %s", describe(it))
		}
		out = append(out, item)
	}
	return out
}
