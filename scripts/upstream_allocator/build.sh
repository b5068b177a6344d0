#!/usr/bin/env bash
# Build the upstream allocator harness from a Kubernetes source tree (vendored, offline).
#   scripts/upstream_allocator/build.sh KUBERNETES_TREE GOROOT OUTPUT [k134]
# The tree is a checkout of k8s.io/kubernetes (or OpenShift's fork, whose
# dynamic-resource-allocation staging is upstream's) with its vendor/ directory; "k134" selects
# the 1.34 feature struct. docs/allocator.md says where the trees used for the figures come from.
set -euo pipefail
tree=$1 goroot=$2 output=$3 tags=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$tree/cmd/upstream-allocate"
cp "$here"/*.go "$tree/cmd/upstream-allocate/"
cd "$tree"
export PATH=$goroot/bin:$PATH GOFLAGS=-mod=vendor GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local CGO_ENABLED=0
unset GOROOT
go build -p 2 -trimpath ${tags:+-tags "$tags"} -o "$output" ./cmd/upstream-allocate
echo "built $output with $(go version)"
