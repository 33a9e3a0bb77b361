// Package ptp runs PTP time synchronisation on a node with linuxptp: it validates a Config (the
// node-side mirror of a LatencyProfile's ptp section), renders the ptp4l configuration file and the
// phc2sys command line, supervises ptp4l and phc2sys as child processes (restart with exponential
// backoff, output forwarded to a logr.Logger, clean stop), reads the port state and offsetFromMaster
// through pmc (or ptp4l's output as a fallback), decides the TimeSynced condition with a threshold and
// a hold time, and exports Prometheus collectors.
//
// The node agent builds a Daemon from the profile and runs it; everything else in this package is a
// building block of the Daemon that is also usable and tested on its own.
//
// Targets linuxptp 3.1 (Debian bookworm): option names and ranges are those of that release.
package ptp
