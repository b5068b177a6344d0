//go:build !k134

package main

import (
	"fmt"
	"reflect"

	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// allocatorFeatures maps the contract's flags onto 1.35+'s allocator features, where binding
// conditions and device status are one entry (the scheduler sets it when both gates are on).
func allocatorFeatures(flags map[string]bool) (structured.Features, error) {
	var f structured.Features
	known := map[string]*bool{
		"adminAccess":          &f.AdminAccess,
		"prioritizedList":      &f.PrioritizedList,
		"partitionableDevices": &f.PartitionableDevices,
		"consumableCapacity":   &f.ConsumableCapacity,
		"deviceTaints":         &f.DeviceTaints,
	}
	binding, status := false, false
	for name, on := range flags {
		switch name {
		case "deviceBinding":
			binding = on
		case "deviceStatus":
			status = on
		default:
			target, ok := known[name]
			if !ok {
				return f, fmt.Errorf("features: unknown feature %q", name)
			}
			*target = on
		}
	}
	f.DeviceBindingAndStatus = binding && status
	return f, nil
}

func celFeatures(f structured.Features) cel.Features {
	return cel.Features{EnableConsumableCapacity: f.ConsumableCapacity}
}

func variant(a structured.Allocator) string {
	method := reflect.ValueOf(a).MethodByName("Channel")
	if !method.IsValid() {
		return ""
	}
	return fmt.Sprint(method.Call(nil)[0].Interface())
}
