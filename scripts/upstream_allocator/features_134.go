//go:build k134

package main

import (
	"fmt"

	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// allocatorFeatures maps the contract's flags onto 1.34's allocator features (one per gate).
func allocatorFeatures(flags map[string]bool) (structured.Features, error) {
	known := map[string]*bool{}
	var f structured.Features
	known["adminAccess"] = &f.AdminAccess
	known["prioritizedList"] = &f.PrioritizedList
	known["partitionableDevices"] = &f.PartitionableDevices
	known["consumableCapacity"] = &f.ConsumableCapacity
	known["deviceTaints"] = &f.DeviceTaints
	known["deviceBinding"] = &f.DeviceBinding
	known["deviceStatus"] = &f.DeviceStatus
	for name, on := range flags {
		target, ok := known[name]
		if !ok {
			return f, fmt.Errorf("features: unknown feature %q", name)
		}
		*target = on
	}
	return f, nil
}

func celFeatures(f structured.Features) cel.Features {
	return cel.Features{EnableConsumableCapacity: f.ConsumableCapacity}
}

// variant is not reported by 1.34's allocators.
func variant(structured.Allocator) string { return "" }
