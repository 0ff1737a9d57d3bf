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
// TestCycleUnderWarningWritesNoDependsOnAndNeverDeadlocks composes, with
// onCycle: Warning, a declared edge config → deploy-api that closes a cycle
// with deploy-api's own reference to config: config's spec.references must
// name deploy-api nowhere (a dependsOn there makes provider-kubernetes put
// each one's reference finalizer on the other, and neither then deletes its
// remote object), every Object must be Synced and Ready, the XR's Cycle
// Warning event and DeletionOrdered condition must name the path, and
// deleting the XR must leave no finalizer, Object or remote object behind.
// TestWaitForReadyNeverHoldsObjectsBehindAProviderConfig composes, with
// creation: WaitForReady, a provider-kubernetes ProviderConfig and Objects
// that use it and depend on it by the input's dependencies: the
// ProviderConfig never reports Ready, yet the Objects must be created and
// Ready, no HeldBack may be raised once they exist, and the teardown must
// be ordered by their ClusterUsages. provider-helm's Releases, the case
// issue 46 reports, can't be built here; provider-kubernetes' own
// ProviderConfig has the same property: it never reports Ready.
// TestTeardownTimeline, opt-in, records teardown timelines with and without
// the function and its WatchOperations (make teardown).
//
// TestInstallFromRegistry installs the function the way users do: its
// packages for linux/amd64 and linux/arm64, built by hack/xpkg.sh, pushed as
// one multi-platform package (an OCI image index) with `crossplane xpkg push
// --package-files=<amd64>,<arm64>` to a registry on loopback (crane registry
// serve), example/operation/install.yaml applied, and Crossplane's default
// package runtime pulling it and running it as a Deployment, whose pods two
// kubelets and kube-scheduler built from the pinned Kubernetes module run
// through containerd and runc (Debian's packages). The pod's imageID is the
// index's digest (containerd's CRI reports the digest of what it pulled by
// the tag); the node's containerd holds the index's linux/amd64 manifest and
// not its linux/arm64 one, the process is an x86-64 program, and its first
// log line names the version the binary was stamped with. Crossplane core
// reports its release's version (hack/tools.sh stamps it), under which the
// package's spec.crossplane.version admits it; a copy of the package that
// declares >=v99.0.0, installed as a second Function, is refused: its
// revision reports "incompatible Crossplane version" and the running
// version, and gets no Deployment, while the installed function keeps
// serving. It also asserts the #371 composite through the installed
// function, an upgrade, a killed container, one of two replicas killed, a
// missing tag and a WatchOperation. It needs root and a network namespace
// with only loopback (hack/controlplane-test.sh), and is skipped elsewhere.
// Four arrangements keep the machine as it was:
//   - Crossplane runs outside the cluster and dials the function at its
//     Service's name, function-dependencies.crossplane-system:9443. It runs
//     in a mount namespace of its own (unshare --mount), where a hosts file
//     of the test's, mapping that name to 127.0.0.1, is bound over
//     /etc/hosts, and a resolv.conf naming 127.0.0.1 over /etc/resolv.conf:
//     the name resolves to loopback for Crossplane alone, and no lookup
//     leaves loopback. There the test stands in for the cluster's network
//     (serviceProxy): it passes each connection to a ready endpoint of the
//     Service, as the EndpointSlice controller lists them.
//   - Each node (containerd and its kubelet) has a mount and a network
//     namespace of its own: a /run of its own and, bound read-only over
//     /proc/sys, the kernel settings the kubelet would otherwise change
//     machine-wide (it runs with protectKernelDefaults); a loopback holding
//     the node's address, where its host-network pods listen, so that two
//     replicas can both hold port 9443; the API server's and the registry's
//     ports forwarded in; and a /var/log and a /var/lib of its own,
//     folders of the node's bound over them, where the kubelet writes paths
//     no flag moves (its container log links, its device plugins' socket).
//     Mounts and addresses go with the namespaces. Each kubelet has a cgroup
//     root of its own and of this run, /fd-node-a-PID or /fd-node-b-PID,
//     PID the test's process id: under one root, each kubelet would remove
//     the other's pods as orphans, whether the other is this run's or that
//     of a run beside it. A root of this run that exists already fails the
//     test; other runs' roots are left alone and logged. The test removes
//     the pods' containers and its cgroups when it ends.
//   - provider-kubernetes v1.2.1 can't leave :9443, so it runs in a network
//     namespace of its own too, with the API server's port forwarded in and
//     its webhook and health ports forwarded out.
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
// Every test starts a stack of its own, and hack/controlplane-test.sh runs
// them side by side, four at a time, each in a process and a network
// namespace of its own, where the ports provider-kubernetes can't move
// (:9443, :8080) are free. They spend most of their time waiting (provider
// backoffs, teardowns, the garbage collector), so the tier takes about as
// long as its longest test, not the sum. None shares a stack, and none could
// without weakening what it proves:
//   - TestReferenceFinalizers counts how many finalizers provider-kubernetes
//     loses at its default reconcile rate: another test's Objects in the same
//     provider would change the count it reports.
//   - TestBothProtectionsHoldAgainstOutOfBandDeletesAndCrashes kills
//     provider-kubernetes and Crossplane mid-teardown, and
//     TestInstallFromRegistry runs Crossplane with its default package
//     runtime and two kubelets: on a shared stack, every other test would
//     see those crashes and that runtime.
//   - TestReferenceFinalizersOnCrossplaneV1 runs Crossplane v1.19 and
//     provider-kubernetes v0.18: another generation of every component.
//   - The Operation tests watch and sweep every Object of the cluster, and
//     the timelines measure teardown time: another test's Objects would be
//     theirs too.
//
// Every wait has its own deadline, shorter than the test's, and fails with
// a message that names what it waited for, so that a slow machine fails
// clearly rather than by the test's timeout.
//
// What the API server answers from an informer about an object just written
// (a SubjectAccessReview after a binding, a CRD's kind after its CRD, a
// webhook after its configuration) is asked until the informer has it, within
// 30 s (awaitCache), before any assertion on the answer: asked at once, it
// can be stale on a loaded machine.
package controlplane
