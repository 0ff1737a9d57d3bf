# The two commands a new machine needs are `make render` and `make test`;
# the rest are their parts. Tools are built from pinned modules under tools/
# into .cache/bin the first time (minutes), then reused.

.PHONY: render test unit e2e controlplane lint generate xpkg bench teardown teardown-plot

# Render the example through the real pipeline (patch-and-transform →
# function-dependencies → auto-ready). EXAMPLE=example/namespaced for the other;
# EXAMPLE=example/operation renders the CronOperation's sweep of a cluster.
EXAMPLE ?= example/cluster
render:
	hack/render.sh $(EXAMPLE)

# The whole test suite: what .ci/run runs. The tiers, where each lives and how to
# run it alone: test/README.md.
test:
	hack/test.sh

unit:
	go test ./...

# Every package under test/e2e, and only those: the folder is the list.
e2e:
	go test -tags e2e -count=1 -timeout 30m ./test/e2e/...

controlplane:
	hack/controlplane-test.sh

lint:
	$$(hack/tools.sh golangci-lint) run --allow-serial-runners ./...
	$$(hack/tools.sh actionlint)

# Regenerate the input CRD in package/input and the deepcopy functions.
generate:
	cd input && go generate -tags generate ./...

# The package for linux/amd64 and linux/arm64, one .xpkg each, without Docker,
# into .cache/xpkg; PUSH=registry.example.com/you/function-dependencies:v0.1.0
# then pushes both as one multi-platform package (crossplane xpkg push).
xpkg:
	hack/xpkg.sh $(if $(PUSH),--push $(PUSH))

# Benchmark against the floor and the neighbouring functions and print the
# tables of docs/performance.md (COUNT=6 runs each; 25 to 75 minutes on two cores, see docs/evidence/bench.md).
bench:
	hack/bench.sh

# Record teardown timelines on the control plane (SIZES dependents per XR;
# without the function, with it, with protection: Usages, and with it and
# example/operation's WatchOperations, or only the ARMS given; RUNS times)
# into docs/teardown, then draw Crossplane v2's into
# docs/teardown/teardown.png. STACK=v1 records on Crossplane v1.19.0 and
# provider-kubernetes v0.18.0 instead. Three runs of all four arms at
# 10,30,60 take over an hour on two cores.
SIZES ?= 10,30,60
RUNS ?= 1
ARMS ?= without,with,usages,watched
STACK ?= v2
teardown:
	FD_CONTROLPLANE_TEARDOWN=$(SIZES) FD_CONTROLPLANE_TEARDOWN_RUNS=$(RUNS) FD_CONTROLPLANE_TEARDOWN_ARMS=$(ARMS) FD_CONTROLPLANE_TEARDOWN_STACK=$(STACK) \
	  hack/controlplane-test.sh -run TestTeardownTimeline -timeout 3h
	$(MAKE) teardown-plot

teardown-plot:
	cd hack/teardownplot && go run . -o ../../docs/teardown/teardown.png $(abspath $(wildcard docs/teardown/crossplane-v2*.json))
