// Package crd embeds the CustomResourceDefinitions that controller-gen writes into bases/ (make
// manifests), so that `tickstack validate` checks objects against the very schema and CEL rules the
// API server installs, with no copy of them to keep in step.
package crd

import "embed"

// Bases holds bases/*.yaml, one CustomResourceDefinition per file.
//
//go:embed bases/*.yaml
var Bases embed.FS
