package bmc

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/redfish"
)

// AttributeType is the Redfish attribute registry type of a BIOS attribute.
type AttributeType string

// The attribute types of the Redfish AttributeRegistry schema.
const (
	TypeEnumeration AttributeType = "Enumeration"
	TypeString      AttributeType = "String"
	TypeInteger     AttributeType = "Integer"
	TypeBoolean     AttributeType = "Boolean"
	TypePassword    AttributeType = "Password"
)

// RegistryAttribute is what the BMC's attribute registry says about one BIOS attribute.
type RegistryAttribute struct {
	// Name is the AttributeName, the key in the Bios resource's Attributes.
	Name string
	// DisplayName is the setup-screen label.
	DisplayName string
	// Type is the attribute's type.
	Type AttributeType
	// Values are the allowed ValueName strings of an Enumeration, in registry order.
	Values []string
	// ReadOnly, Immutable: the attribute cannot be set.
	ReadOnly, Immutable bool
	// LowerBound, UpperBound, ScalarIncrement constrain an Integer when set.
	LowerBound, UpperBound, ScalarIncrement *int64
	// MinLength, MaxLength constrain a String when set.
	MinLength, MaxLength *int64
	// ValueExpression is a regular expression a String must match, when set.
	ValueExpression string
	// ResetRequired says a reset is needed for a change to take effect.
	ResetRequired bool
}

// Registry is a BIOS attribute registry: the schema of every attribute the BIOS has.
type Registry struct {
	// ID is the registry's resource Id, the name the Bios resource gives in AttributeRegistry.
	ID string
	// Attributes by name.
	Attributes map[string]RegistryAttribute
}

// registryDoc is the part of an AttributeRegistry resource this package reads. Bounds are pointers so
// an absent bound is not mistaken for zero.
type registryDoc struct {
	ODataType       string `json:"@odata.type"`
	ID              string `json:"Id"`
	RegistryEntries struct {
		Attributes []struct {
			AttributeName   string
			DisplayName     string
			Type            AttributeType
			ReadOnly        bool
			Immutable       bool
			ResetRequired   bool
			LowerBound      *json.Number
			UpperBound      *json.Number
			ScalarIncrement *json.Number
			MinLength       *json.Number
			MaxLength       *json.Number
			ValueExpression string
			Value           []struct{ ValueName string }
		}
	}
}

// ParseRegistry decodes an AttributeRegistry JSON document.
func ParseRegistry(data []byte) (*Registry, error) {
	var doc registryDoc
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode attribute registry: %w", err)
	}
	return doc.registry()
}

func (doc *registryDoc) registry() (*Registry, error) {
	if doc.ODataType != "" && !strings.Contains(doc.ODataType, "AttributeRegistry") {
		return nil, fmt.Errorf("resource %q is a %s, not an AttributeRegistry", doc.ID, doc.ODataType)
	}
	r := &Registry{ID: doc.ID, Attributes: make(map[string]RegistryAttribute, len(doc.RegistryEntries.Attributes))}
	num := func(n *json.Number) *int64 {
		if n == nil {
			return nil
		}
		v, err := n.Int64()
		if err != nil {
			return nil
		}
		return &v
	}
	for _, a := range doc.RegistryEntries.Attributes {
		if a.AttributeName == "" {
			continue
		}
		ra := RegistryAttribute{
			Name: a.AttributeName, DisplayName: a.DisplayName, Type: a.Type,
			ReadOnly: a.ReadOnly, Immutable: a.Immutable, ResetRequired: a.ResetRequired,
			LowerBound: num(a.LowerBound), UpperBound: num(a.UpperBound), ScalarIncrement: num(a.ScalarIncrement),
			MinLength: num(a.MinLength), MaxLength: num(a.MaxLength), ValueExpression: a.ValueExpression,
		}
		for _, v := range a.Value {
			ra.Values = append(ra.Values, v.ValueName)
		}
		r.Attributes[a.AttributeName] = ra
	}
	return r, nil
}

// Names lists the registry's attribute names, sorted.
func (r *Registry) Names() []string { return slices.Sorted(maps.Keys(r.Attributes)) }

// findRegistry looks the attribute registry named by the Bios resource up in /redfish/v1/Registries.
// Vendors spell the registry file's Id and Registry properties differently from the registry's own Id
// (sushy-tools: file BiosAttributeRegistry.v1_0_0, registry BiosAttributeRegistryP89.v1_0_0), so the
// registry documents of plausible files are fetched and matched on their own Id. It returns nil and
// a note when the BMC has none.
func (c *Client) findRegistry(api *gofish.APIClient, name string) (*Registry, string, error) {
	if name == "" {
		return nil, "the Bios resource names no AttributeRegistry", nil
	}
	c.mu.Lock()
	cached := c.registry[name]
	c.mu.Unlock()
	if cached != nil {
		return cached, "", nil
	}
	files, err := api.Service.Registries()
	if err != nil {
		var e *Error
		if classified := c.fail("list registries", err); errors.As(classified, &e) && e.Kind != KindProtocol {
			return nil, "", classified
		}
		return nil, fmt.Sprintf("attribute registry %s not readable: the BMC's /Registries collection failed: %s", name, c.scrub.scrub(err.Error())), nil
	}
	base := strings.ToLower(strings.SplitN(name, ".", 2)[0])
	candidates := make([]*redfish.MessageRegistryFile, 0, len(files))
	for _, f := range files {
		id, reg := strings.ToLower(f.ID), strings.ToLower(f.Registry)
		exact := f.ID == name || f.Registry == name
		plausible := strings.HasPrefix(base, strings.SplitN(id, ".", 2)[0]) || strings.Contains(id, "attributeregistry") ||
			strings.Contains(reg, "attributeregistry") || strings.Contains(id, "bios")
		switch {
		case exact:
			candidates = append([]*redfish.MessageRegistryFile{f}, candidates...)
		case plausible:
			candidates = append(candidates, f)
		}
	}
	var tried []string
	for _, f := range candidates {
		for _, loc := range f.Location {
			if loc.URI == "" || (loc.Language != "" && loc.Language != "en" && loc.Language != "default") {
				continue
			}
			tried = append(tried, loc.URI)
			var doc registryDoc
			if _, err := c.getJSON(api, "read attribute registry", loc.URI, &doc); err != nil {
				c.log.V(1).Info("attribute registry location unreadable", "uri", loc.URI, "error", err.Error())
				continue
			}
			if doc.ID != name && !(f.ID == name || f.Registry == name) {
				continue
			}
			reg, err := doc.registry()
			if err != nil {
				continue
			}
			reg.ID = name
			c.mu.Lock()
			c.registry[name] = reg
			c.mu.Unlock()
			c.log.V(1).Info("read attribute registry", "registry", name, "uri", loc.URI, "attributes", len(reg.Attributes))
			return reg, "", nil
		}
	}
	if len(tried) == 0 {
		return nil, fmt.Sprintf("the BMC publishes no attribute registry %s under /redfish/v1/Registries", name), nil
	}
	return nil, fmt.Sprintf("none of the registry files the BMC publishes (%s) is attribute registry %s", strings.Join(tried, ", "), name), nil
}
