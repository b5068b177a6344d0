// Command upstream-allocate answers `manage.py allocate` cases with Kubernetes' own structured
// allocator (k8s.io/dynamic-resource-allocation/structured), built from a Kubernetes source tree
// by build.sh. It reads JSON Lines on stdin and writes one JSON line per case, in the contract's
// shape, so scripts/upstream_differential.py can compare the two answers case by case.
//
// What the scheduler does around the allocator is reproduced: objects get the API server's
// defaults, the allocated state is gathered from allocatedClaims as the scheduler's claim tracker
// gathers it, and every Allocate call has the scheduler's 10 s budget. Nodes are tried as the
// contract tries them: in name order (or only the named one), the first that allocates wins,
// and when none does the first error is the answer.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	resourcedefaults "k8s.io/kubernetes/pkg/apis/resource/v1"
)

type caseLine struct {
	Name            *string           `json:"name"`
	Features        map[string]bool   `json:"features"`
	Nodes           []json.RawMessage `json:"nodes"`
	DeviceClasses   []json.RawMessage `json:"deviceClasses"`
	ResourceSlices  []json.RawMessage `json:"resourceSlices"`
	AllocatedClaims []json.RawMessage `json:"allocatedClaims"`
	Claims          []json.RawMessage `json:"claims"`
	Node            *string           `json:"node"`
}

type answer struct {
	Name        *string                        `json:"name"`
	Status      string                         `json:"status"`
	Node        *string                        `json:"node,omitempty"`
	Allocations []resourceapi.AllocationResult `json:"allocations,omitempty"`
	Error       string                         `json:"error,omitempty"`
	Variant     string                         `json:"variant,omitempty"`
}

type classes map[string]*resourceapi.DeviceClass

func (c classes) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(c))
	for _, class := range c {
		out = append(out, class)
	}
	return out, nil
}

func (c classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if class, ok := c[name]; ok {
		return class, nil
	}
	return nil, fmt.Errorf("deviceclass.resource.k8s.io %q not found", name)
}

func decode[T any](raw []json.RawMessage, what string) ([]*T, error) {
	out := make([]*T, 0, len(raw))
	for index, item := range raw {
		value := new(T)
		if err := json.Unmarshal(item, value); err != nil {
			return nil, fmt.Errorf("%s[%d]: %v", what, index, err)
		}
		out = append(out, value)
	}
	return out, nil
}

// allocatedState follows the scheduler's claim tracker: admin-access results are not allocated;
// with consumable capacity a result with a share ID is a share (and its consumed capacity counts),
// without it every result takes its whole device.
func allocatedState(claims []*resourceapi.ResourceClaim, consumable bool) structured.AllocatedState {
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, claim := range claims {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, result := range claim.Status.Allocation.Devices.Results {
			if ptr.Deref(result.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
			if consumable && result.ShareID != nil {
				state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, result.ShareID))
				if result.ConsumedCapacity != nil {
					state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity))
				}
				continue
			}
			state.AllocatedDevices.Insert(id)
		}
	}
	return state
}

// run answers one case. A panic inside upstream's allocator (1.34.9 has one, see
// docs/allocator.md) is answered as status "panic": the scheduler itself would crash there.
func run(line []byte) (out answer) {
	var c caseLine
	defer func() {
		if recovered := recover(); recovered != nil {
			out = answer{Name: c.Name, Status: "panic", Error: fmt.Sprint(recovered)}
		}
	}()
	if err := json.Unmarshal(line, &c); err != nil {
		return answer{Status: "error", Error: "invalid JSON: " + err.Error()}
	}
	fail := func(err error) answer { return answer{Name: c.Name, Status: "error", Error: err.Error()} }
	features, err := allocatorFeatures(c.Features)
	if err != nil {
		return fail(err)
	}
	nodes, err := decode[v1.Node](c.Nodes, "nodes")
	if err != nil {
		return fail(err)
	}
	classList, err := decode[resourceapi.DeviceClass](c.DeviceClasses, "deviceClasses")
	if err != nil {
		return fail(err)
	}
	slices, err := decode[resourceapi.ResourceSlice](c.ResourceSlices, "resourceSlices")
	if err != nil {
		return fail(err)
	}
	allocated, err := decode[resourceapi.ResourceClaim](c.AllocatedClaims, "allocatedClaims")
	if err != nil {
		return fail(err)
	}
	claims, err := decode[resourceapi.ResourceClaim](c.Claims, "claims")
	if err != nil {
		return fail(err)
	}
	if len(claims) == 0 {
		return fail(errors.New("no claims to allocate"))
	}
	byName := classes{}
	for _, class := range classList {
		byName[class.Name] = class
	}
	for _, slice := range slices {
		resourcedefaults.SetObjectDefaults_ResourceSlice(slice)
	}
	for _, claim := range append(append([]*resourceapi.ResourceClaim{}, allocated...), claims...) {
		resourcedefaults.SetObjectDefaults_ResourceClaim(claim)
	}
	state := allocatedState(allocated, features.ConsumableCapacity)
	ctx := context.Background()
	allocator, err := structured.NewAllocator(ctx, features, state, byName, slices, cel.NewCache(10, celFeatures(features)))
	if err != nil {
		return fail(err)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	if c.Node != nil {
		var chosen []*v1.Node
		for _, node := range nodes {
			if node.Name == *c.Node {
				chosen = append(chosen, node)
			}
		}
		if len(chosen) == 0 {
			return fail(fmt.Errorf("node %s not found", *c.Node))
		}
		nodes = chosen[:1]
	}
	var firstErr error
	for _, node := range nodes {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		results, err := allocator.Allocate(attempt, node, claims)
		cancel()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if results != nil {
			name := node.Name
			return answer{Name: c.Name, Status: "allocated", Node: &name, Allocations: results, Variant: variant(allocator)}
		}
	}
	if firstErr != nil {
		return answer{Name: c.Name, Status: "error", Error: firstErr.Error(), Variant: variant(allocator)}
	}
	return answer{Name: c.Name, Status: "unsatisfiable", Variant: variant(allocator)}
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<30)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	for in.Scan() {
		if len(in.Bytes()) == 0 {
			continue
		}
		if err := encoder.Encode(run(in.Bytes())); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out.Flush()
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
