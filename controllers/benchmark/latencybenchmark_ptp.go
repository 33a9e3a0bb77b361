package benchmark

import (
	corev1 "k8s.io/api/core/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// benchPTPVolume is the runner pod's volume holding the node agent's PTP directory.
const benchPTPVolume = "ptp"

// addPTPSocket gives the runner container of spec the node agent's read-only PTP directory
// (tsv1.PTPReadOnlyDir: ptp4l's management socket served GET-only, copies of ptp4l.conf and the
// system clock's offset), mounted read-only at tsv1.PTPRunDir, when the benchmark selects the ptp
// suite; otherwise it changes nothing. Nothing else of the host's PTP is mounted: not ptp4l's own
// socket, through which a SET or COMMAND would change the node's clock. pmc binds its reply socket
// in the runner's work directory, and the agent answers it there through the runner's root. The
// directory is created when missing (a node whose agent runs no ptp4l), so the pod still starts and
// the ptp suite reports that nothing answered instead of the pod waiting for the volume until the
// Job's deadline. The CRD keeps suites.ptp.socket inside tsv1.PTPRunDir.
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
		HostPath: &corev1.HostPathVolumeSource{Path: tsv1.PTPReadOnlyDir, Type: &hostPathType}}})
	runner.VolumeMounts = append(runner.VolumeMounts, corev1.VolumeMount{Name: benchPTPVolume, MountPath: tsv1.PTPRunDir, ReadOnly: true})
}
