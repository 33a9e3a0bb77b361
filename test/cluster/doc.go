// Package cluster holds the tests of the local cluster itself (hack/local-cluster). They need root and
// start real processes, so they build only with the e2e tag: go test -tags e2e ./test/cluster/
package cluster
