package bmc

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// What the BIOS controller and `tickstack plan` take from the cluster: the BMC object of a node, its
// connection settings, and the attributes a profile asks for.

// WantedAttributes merges a vendor preset's attributes (the BMC's own vendor for Auto) under the
// profile's explicit attributes: what the operator stages.
func WantedAttributes(spec *tsv1.BIOSSpec, vendor Vendor) (Attributes, error) {
	out := Attributes{}
	if spec.Preset != "" && spec.Preset != tsv1.BIOSPresetNone {
		v := Vendor(spec.Preset)
		if spec.Preset == tsv1.BIOSPresetAuto {
			if vendor == "" {
				return nil, fmt.Errorf("the BMC's manufacturer matches no vendor preset (Auto)")
			}
			v = vendor
		}
		p, err := PresetFor(v)
		if err != nil {
			return nil, err
		}
		attrs, err := p.LowLatencyAttributes()
		if err != nil {
			return nil, err
		}
		for k, val := range attrs {
			out[k] = val
		}
	}
	for _, a := range spec.Attributes {
		out[a.Name] = a.Value
	}
	return out, nil
}

// ObjectName is the BMC object of a node: its tickstack.io/bmc annotation, or the node's name.
func ObjectName(node *corev1.Node) string {
	if v := node.Annotations[tsv1.BMCAnnotation]; v != "" {
		return v
	}
	return node.Name
}

// ConfigFrom turns a BMC object and its credentials Secret into a Config. The error names the
// missing key.
func ConfigFrom(obj *tsv1.BMC, secret *corev1.Secret) (Config, error) {
	ref := obj.Spec.CredentialsSecret
	for _, key := range []string{"username", "password"} {
		if len(secret.Data[key]) == 0 {
			return Config{}, fmt.Errorf("BMC %s spec.credentialsSecret: Secret %s/%s has no %s key; add it", obj.Name, ref.Namespace, ref.Name, key)
		}
	}
	cfg := Config{
		Endpoint:       obj.Spec.Endpoint,
		SystemID:       obj.Spec.SystemID,
		Credentials:    Credentials{Username: string(secret.Data["username"]), Password: string(secret.Data["password"])},
		AllowPlainHTTP: obj.Spec.AllowPlainHTTP,
	}
	if t := obj.Spec.TLS; t != nil {
		if t.CABundle != "" {
			cfg.CABundle = []byte(t.CABundle)
		}
		cfg.SystemRoots, cfg.InsecureSkipVerify = t.SystemRoots, t.InsecureSkipVerify
	}
	return cfg, nil
}
