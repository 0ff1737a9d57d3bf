// Package controlplane proves, on a real control plane started on loopback, that
// provider-kubernetes loses reference finalizers under parallel reconciles
// (provider-kubernetes #371) and that function-dependencies restores them and
// orders deletion; and, with Crossplane's Usage webhook served, that the
// Usages the function composes for references outside the composite refuse
// the referenced object's deletion and replay it once the dependent is gone;
// and, with Crossplane's Operations enabled and no Composition, that the
// function run by the WatchOperation of example/operation/watch-objects.yaml
// restores the finalizers the provider lost on Objects created directly,
// keeps the referenced object's managedFields bounded, and orders deletion,
// its teardown nudges, with those of watch-namespaces.yaml, following their
// rules. TestInferredOrderKeepsTheClusterUntilWhatRunsOnIt composes a
// kubeconfig Secret, a ProviderConfig reading it and Objects using that:
// without the function's infer, deleting the XR leaves the Objects stuck;
// with it, the Usages of the inferred edges order the teardown, within 1.5
// times that of a baseline whose Secret the XR doesn't compose; and so does,
// within the same bound, the Usage of the edge the input declares where the
// Secret is written by a workload the XR composes (the test writes it, as
// the workload's controller, owned by the workload's remote object, so that
// the garbage collector deletes it with the workload).
// TestTeardownTimeline, opt-in, records teardown timelines with and without
// the function and its WatchOperations (make teardown).
//
// The test runs only with the controlplane build tag:
//
//	hack/controlplane-test.sh
//
// It builds etcd, kube-apiserver, kube-controller-manager, provider-kubernetes,
// Crossplane core and the functions with hack/tools.sh (cold builds take about
// half an hour on two cores), starts them as local processes, and stops them
// when it ends.
//
// What the API server answers from an informer about an object just written
// (a SubjectAccessReview after a binding, a CRD's kind after its CRD, a
// webhook after its configuration) is asked until the informer has it, within
// 30 s (awaitCache), before any assertion on the answer: asked at once, it
// can be stale on a loaded machine.
package controlplane
