// Package node holds the controllers of the Node objects: the node label controller
// (tickstack.io/profile once the agent reports Applied), node validation (tickstack.io/validated and
// the tickstack.io/unvalidated taint), the PTP gate (the node condition tickstack.io/TimeSynced) and
// the node-state metrics.
package node
