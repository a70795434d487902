package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// InventorySinkRef binds an inventory to one sink. In YAML it is written
// either as an object (`{name: warehouse, exportMinInterval: 5m}`) or, as
// upstream samples do, as a plain string naming the sink; a string decodes
// to {name: <string>} and is always re-encoded as an object.
//
// The CRD schema accepts both shapes, so an element has no single type and
// the API server cannot run CEL rules on it: objects are still checked field
// by field (required name, patterns, limits); the rest (no '/' in names, the
// namespace rule of KollectInventory, 20 bindings in all) is checked when
// the inventory is reconciled and reported as a Degraded condition.
// +kubebuilder:validation:Type=""
// +kubebuilder:pruning:PreserveUnknownFields
type InventorySinkRef struct {
	// name of the sink object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[^/]+$`
	Name string `json:"name"`
	// namespace of the sink; only on KollectClusterInventory, where it
	// defaults to spec.sinkNamespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
	// exportMinInterval overrides the inventory's debounce for this binding
	// (0s to 24h).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	ExportMinInterval string `json:"exportMinInterval,omitempty"`
	// maxExportBytes overrides the export size ceiling for this binding.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxExportBytes *int64 `json:"maxExportBytes,omitempty"`
}

// UnmarshalJSON accepts a sink reference written as a string or an object.
func (r *InventorySinkRef) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var name string
		if err := json.Unmarshal(data, &name); err != nil {
			return fmt.Errorf("sink reference: %w", err)
		}
		*r = InventorySinkRef{Name: name}
		return nil
	}
	type plain InventorySinkRef
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("sink reference: %w", err)
	}
	*r = InventorySinkRef(p)
	return nil
}
