package controllers

import (
	corev1 "k8s.io/api/core/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// benchPTPVolume is the runner pod's volume holding the node agent's PTP directory.
const benchPTPVolume = "ptp"

// addPTPSocket gives the runner container of spec the host's PTP directory (bench.PTPRunDir, the
// node agent's ptp4l configuration and management socket) at the same path when the benchmark
// selects the ptp suite; otherwise it changes nothing. The mount is writable: pmc binds its reply
// socket there, because ptp4l answers to that path as its own mount namespace resolves it. The
// directory is created when missing (a node whose agent runs no ptp4l), so the pod still starts and
// the ptp suite reports that nothing answered instead of the pod waiting for the volume until the
// Job's deadline. The CRD keeps suites.ptp.socket inside that directory.
func addPTPSocket(spec *corev1.PodSpec, b *tsv1.LatencyBenchmark) {
	if b.Spec.Suites.PTP == nil {
		return
	}
	var runner *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == benchRunnerContainer {
			runner = &spec.Containers[i]
		}
	}
	if runner == nil {
		return
	}
	hostPathType := corev1.HostPathDirectoryOrCreate
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: benchPTPVolume, VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: tsv1.PTPRunDir, Type: &hostPathType}}})
	runner.VolumeMounts = append(runner.VolumeMounts, corev1.VolumeMount{Name: benchPTPVolume, MountPath: tsv1.PTPRunDir})
}
