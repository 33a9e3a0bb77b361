package suggest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// document is what is printed of the profile: no status, no server-set metadata.
type document struct {
	APIVersion string                  `json:"apiVersion"`
	Kind       string                  `json:"kind"`
	Metadata   metadata                `json:"metadata"`
	Spec       tsv1.LatencyProfileSpec `json:"spec"`
}

type metadata struct {
	Name string `json:"name"`
}

func (s *Suggestion) document() document {
	return document{APIVersion: s.Profile.APIVersion, Kind: s.Profile.Kind, Metadata: metadata{Name: s.Profile.Name}, Spec: s.Profile.Spec}
}

// JSON is the profile as indented JSON (JSON has no comments: the notes are left out).
func (s *Suggestion) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(s.document(), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// YAML is the profile with the header above it and each note above the field it explains.
func (s *Suggestion) YAML() ([]byte, error) {
	b, err := json.Marshal(s.document())
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	used := map[string]bool{}
	annotate(doc.Content[0], "", 0, s.Notes, used)
	for path := range s.Notes {
		if !used[path] {
			return nil, fmt.Errorf("suggest: note for %s, which the profile does not have", path)
		}
	}
	doc.HeadComment = wrap(s.Header, 0)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// annotate turns the JSON's flow style into block style and puts each note on its field: above a
// mapping key, or above a list item.
func annotate(n *yaml.Node, path string, indent int, notes map[string]string, used map[string]bool) {
	n.Style = 0
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			key.Style = 0
			p := key.Value
			if path != "" {
				p = path + "." + key.Value
			}
			if note, ok := notes[p]; ok {
				key.HeadComment, used[p] = wrap(note, indent), true
			}
			annotate(val, p, indent+2, notes, used)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if note, ok := notes[p]; ok {
				item.HeadComment, used[p] = wrap(note, indent), true
			}
			annotate(item, p, indent+2, notes, used)
		}
	}
}

// wrap breaks text into comment lines that end by column 100 when indented by indent, keeping its
// own line breaks.
func wrap(text string, indent int) string {
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && indent+2+len(line)+1+len(w) > 100 {
				lines = append(lines, line)
				line = ""
			}
			line = strings.TrimSpace(line + " " + w)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
