package ptp

import "strings"

// Option tables of linuxptp 3.1 (ptp4l(8), phc2sys(8) of that release). Kept as constant strings so
// the package holds no mutable state.

// ptp4lGlobalOptions may only appear in [global] ("PROGRAM AND CLOCK OPTIONS" in ptp4l(8)).
const ptp4lGlobalOptions = `BMCA G.8275.defaultDS.localPriority asCapable assume_two_step check_fup_sync
clockAccuracy clockClass clockIdentity clock_servo clock_type dataset_comparison domainNumber dscp_event
dscp_general first_step_threshold free_running freq_est_interval gmCapable hwts_filter ignore_source_id
inhibit_announce initial_delay kernel_leap logging_level manufacturerIdentity maxStepsRemoved
max_frequency message_tag msg_interval_request ntpshm_segment offsetScaledLogVariance
pi_f_offset_const pi_integral_const pi_integral_exponent pi_integral_norm_max pi_integral_scale
pi_max_frequency pi_offset_const pi_proportional_const pi_proportional_exponent
pi_proportional_norm_max pi_proportional_scale priority1 priority2 productDescription revisionData
sanity_freq_limit servo_num_offset_values servo_offset_threshold slaveOnly slave_event_monitor
socket_priority step_threshold summary_interval tc_spanning_tree timeSource time_stamping twoStepFlag
tx_timestamp_timeout udp6_scope uds_address use_syslog userDescription utc_offset verbose
write_phase_mode`

// ptp4lPortOptions may appear in a port section, or in [global] as the default of every port
// ("PORT OPTIONS" in ptp4l(8)).
const ptp4lPortOptions = `G.8275.portDS.localPriority announceReceiptTimeout boundary_clock_jbod
delayAsymmetry delay_filter delay_filter_length delay_mechanism egressLatency fault_badpeernet_interval
fault_reset_interval follow_up_info hybrid_e2e ignore_transport_specific ingressLatency
inhibit_delay_req inhibit_multicast_service logAnnounceInterval logMinDelayReqInterval
logMinPdelayReqInterval logSyncInterval masterOnly min_neighbor_prop_delay neighborPropDelayThresh
net_sync_monitor network_transport operLogPdelayReqInterval operLogSyncInterval p2p_dst_mac
path_trace_enabled ptp_dst_mac syncReceiptTimeout transportSpecific tsproc_mode udp_ttl
unicast_listen unicast_master_table unicast_req_duration`

// optionScope says in which section of the ptp4l file an option goes.
type optionScope int

const (
	scopeGlobal optionScope = iota
	scopePort
)

func ptp4lOptionScope(key string) (optionScope, bool) {
	for _, k := range strings.Fields(ptp4lPortOptions) {
		if k == key {
			return scopePort, true
		}
	}
	for _, k := range strings.Fields(ptp4lGlobalOptions) {
		if k == key {
			return scopeGlobal, true
		}
	}
	return 0, false
}

func ptp4lKnown() []string {
	return append(strings.Fields(ptp4lGlobalOptions), strings.Fields(ptp4lPortOptions)...)
}

// ptp4lManaged returns, for an option the agent sets itself, what the user should set instead.
func ptp4lManaged(key string) (string, bool) {
	switch key {
	case "domainNumber":
		return "set ptp.domain instead", true
	case "network_transport":
		return "set ptp.transport instead", true
	case "time_stamping":
		return "set ptp.timestamping instead", true
	case "slaveOnly", "masterOnly":
		return "set ptp.role instead (slave or grandmaster)", true
	case "uds_address":
		return "the agent places ptp4l's management socket itself to query it with pmc; remove the option", true
	case "use_syslog", "verbose":
		return "the agent runs ptp4l with -m -q and forwards its output to the agent's log; remove the option", true
	}
	return "", false
}

// phc2sysLongOptionNames are phc2sys(8) FILE OPTIONS, passed as --name value.
const phc2sysLongOptionNames = `kernel_leap logging_level message_tag sanity_freq_limit clock_servo
transportSpecific pi_proportional_const pi_integral_const pi_proportional_scale
pi_proportional_exponent pi_proportional_norm_max pi_integral_scale pi_integral_exponent
pi_integral_norm_max step_threshold first_step_threshold ntpshm_segment`

func phc2sysLongOption(key string) bool {
	for _, k := range strings.Fields(phc2sysLongOptionNames) {
		if k == key {
			return true
		}
	}
	return false
}

// phc2sysShortFlags are phc2sys flags without a long form that a user may tune; x takes no argument.
const phc2sysShortFlags = `-E -P -I -S -F -R -N -L -M -u -x -l -t`

func phc2sysShortOption(key string) (takesArg, ok bool) {
	for _, k := range strings.Fields(phc2sysShortFlags) {
		if k == key {
			return k != "-x", true
		}
	}
	return false, false
}

// phc2sysManaged returns, for a phc2sys option the agent sets itself, what the user should do.
func phc2sysManaged(key string) (string, bool) {
	switch key {
	case "-a", "-r", "-s", "-c", "-d", "-w":
		return "the agent runs phc2sys in automatic mode (-a -r) following ptp4l's port state; remove the option", true
	case "-n", "domainNumber":
		return "set ptp.domain instead", true
	case "-z", "uds_address":
		return "the agent points phc2sys at ptp4l's management socket itself; remove the option", true
	case "-m", "-q", "-f", "use_syslog", "verbose":
		return "the agent runs phc2sys with -m -q and forwards its output to the agent's log; remove the option", true
	}
	return "", false
}
