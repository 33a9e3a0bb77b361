//go:build !linux

package qualify

import tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

// probeNIC: qualifying reads Linux's ethtool, sysfs and procfs.
func probeNIC(o *Options, r *tsv1.QualifyReport) {
	r.Error = "tickstack qualify runs on the Linux node that holds the interface"
}
