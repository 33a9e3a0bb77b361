package benchmark

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TwoPods placement: each node gets a reflector Job (BuildReflectorJob) and a Service selecting
// its pod, created before the runner Job, whose --peer is the Service's cluster IP. The runner
// waits for the reflector to answer; the reflector then tells it the address its sockperf servers
// bind to (the profile's latency interface when the pod webhook attached one), so only the control
// connection goes through the Service.

// reconcileReflector creates a TwoPods node's reflector Service and Job, and returns the address
// the runner reaches the reflector at.
func (r *LatencyBenchmarkReconciler) reconcileReflector(ctx context.Context, in BenchJobInput) (string, error) {
	b := in.Benchmark
	want := buildReflectorService(in)
	// Services are read uncached: the manager may not list them anywhere.
	svc := &corev1.Service{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), svc)
	if apierrors.IsNotFound(err) {
		svc = want
		if err = r.Client.Create(ctx, svc); apierrors.IsAlreadyExists(err) {
			// Created by an earlier reconcile the cache has not seen yet.
			svc = &corev1.Service{}
			err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), svc)
		}
	}
	if err != nil {
		return "", fmt.Errorf("the reflector Service of node %s: %w", in.Node, err)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "", fmt.Errorf("the reflector Service %s of node %s has no cluster IP", svc.Name, in.Node)
	}
	job, err := BuildReflectorJob(in)
	if err != nil {
		return "", err
	}
	if err := r.Client.Create(ctx, job); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating the reflector Job of node %s: %w", in.Node, err)
		}
	} else {
		r.event(b, corev1.EventTypeNormal, "JobCreated", "Create", "run %d: Job %s reflects for node %s, at %s", in.Run, job.Name, in.Node, svc.Spec.ClusterIP)
	}
	return svc.Spec.ClusterIP, nil
}

// stopReflector deletes a judged node's reflector Job while it still runs (its runner will not
// come back, and it may hold exclusive CPUs until its deadline). Finished ones stay for their logs.
func (r *LatencyBenchmarkReconciler) stopReflector(ctx context.Context, ns, runner string) error {
	job := &batchv1.Job{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ReflectorJobName(runner)}, job); err != nil {
		return client.IgnoreNotFound(err)
	}
	if job.Status.Active == 0 {
		return nil
	}
	if err := r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the reflector Job %s: %w", job.Name, err)
	}
	return nil
}

// deleteOldReflectorServices deletes the reflector Services sel selects (those of older runs).
func (r *LatencyBenchmarkReconciler) deleteOldReflectorServices(ctx context.Context, ns string, sel client.ListOption) error {
	var svcs corev1.ServiceList
	if err := r.APIReader.List(ctx, &svcs, client.InNamespace(ns), sel); err != nil {
		return fmt.Errorf("listing reflector Services of older runs: %w", err)
	}
	for i := range svcs.Items {
		if err := r.Client.Delete(ctx, &svcs.Items[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Service %s of an older run: %w", svcs.Items[i].Name, err)
		}
	}
	return nil
}
