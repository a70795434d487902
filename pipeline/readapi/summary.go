package readapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/model/rows"
)

// Query limits are upstream's: 500 rows a page unless asked, 5,000 at most.
const (
	defaultLimit = 500
	maxLimit     = 5000
)

// Filter is what the inventory routes' query parameters select: exact
// matches on the row's fields, and a page.
type Filter struct {
	Cluster, Namespace, Inventory, Target string
	Group, Version, Kind, Name            string
	Limit, Offset                         int
}

// parseFilter reads the query parameters; a bad page is an error that
// names the parameter.
func parseFilter(q url.Values) (Filter, error) {
	f := Filter{Cluster: q.Get("cluster"), Namespace: q.Get("namespace"), Inventory: q.Get("inventory"), Target: q.Get("target"),
		Group: q.Get("group"), Version: q.Get("version"), Kind: q.Get("kind"), Name: q.Get("name"), Limit: defaultLimit}
	for _, p := range []struct {
		name string
		into *int
		max  int
	}{{"limit", &f.Limit, maxLimit}, {"offset", &f.Offset, -1}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || (p.name == "limit" && n == 0) {
			return f, fmt.Errorf("%s must be a positive whole number, got %q", p.name, v)
		}
		if p.max > 0 && n > p.max {
			n = p.max
		}
		*p.into = n
	}
	return f, nil
}

// matches says whether r passes the row filters. A row's namespace
// filter is its target's namespace, which is the inventory's: the rows of
// a namespace are what its inventories export.
func (f Filter) matches(r *rows.Row) bool {
	return (f.Target == "" || r.TargetName == f.Target) && (f.Group == "" || r.Group == f.Group) &&
		(f.Version == "" || r.Version == f.Version) && (f.Kind == "" || r.Kind == f.Kind) && (f.Name == "" || r.Name == f.Name)
}

// selects says whether the rows of the inventory at ref are read.
func (f Filter) selects(ref Ref) bool {
	return (f.Cluster == "" || ref.Cluster == f.Cluster) && (f.Namespace == "" || ref.Namespace == f.Namespace) &&
		(f.Inventory == "" || ref.Name == f.Inventory)
}

// Summary is upstream's summary JSON.
type Summary struct {
	SchemaVersion string            `json:"schemaVersion"`
	ItemCount     int               `json:"itemCount"`
	Cluster       string            `json:"cluster,omitempty"`
	Namespace     string            `json:"namespace,omitempty"`
	Inventory     string            `json:"inventory,omitempty"`
	Items         []json.RawMessage `json:"items"`
	UpdatedAt     *time.Time        `json:"updatedAt,omitempty"`
	Pagination    *Pagination       `json:"pagination,omitempty"`
	ExportStatus  []ExportStatus    `json:"exportStatus,omitempty"`
	Checksum      string            `json:"checksum,omitempty"`
}

// Pagination says which page a summary holds.
type Pagination struct {
	Limit   int  `json:"limit"`
	Offset  int  `json:"offset"`
	Total   int  `json:"total"`
	HasMore bool `json:"hasMore"`
}

// ExportStatus is one binding's last outcome, as its sink acknowledged it.
type ExportStatus struct {
	SinkKind       string     `json:"sinkKind"`
	SinkName       string     `json:"sinkName"`
	Status         string     `json:"status"`
	LastExportTime *time.Time `json:"lastExportTime,omitempty"`
	ExportedCount  int        `json:"exportedCount"`
	Message        string     `json:"message,omitempty"`
}

// summarize builds the summary of the states f selects: their rows that
// pass f, each row once (inventories of one namespace export the same
// rows), in the states' order and each state's row order, one page of
// them. ItemCount is the page's length; Pagination.Total counts them all.
func summarize(states []*State, f Filter) *Summary {
	s := &Summary{SchemaVersion: rows.SchemaVersion, Cluster: f.Cluster, Namespace: f.Namespace, Inventory: f.Inventory, Items: []json.RawMessage{}}
	seen := map[rows.Key]bool{}
	total := 0
	for _, st := range states {
		if !f.selects(st.Ref) || st.Snapshot == nil {
			continue
		}
		if s.UpdatedAt == nil || st.Updated.After(*s.UpdatedAt) {
			at := st.Updated
			s.UpdatedAt = &at
		}
		for _, r := range st.Snapshot.Rows {
			k := r.Key()
			if seen[k] || !f.matches(r) {
				continue
			}
			seen[k] = true
			if total >= f.Offset && len(s.Items) < f.Limit {
				s.Items = append(s.Items, r.JSON())
			}
			total++
		}
	}
	s.ItemCount = len(s.Items)
	s.Pagination = &Pagination{Limit: f.Limit, Offset: f.Offset, Total: total, HasMore: f.Offset+len(s.Items) < total}
	return s
}

// single builds the summary of one inventory: its rows that pass f, its
// export status and its checksum.
func single(st *State, f Filter) *Summary {
	s := summarize([]*State{st}, Filter{Cluster: st.Ref.Cluster, Namespace: st.Ref.Namespace, Inventory: st.Ref.Name,
		Target: f.Target, Group: f.Group, Version: f.Version, Kind: f.Kind, Name: f.Name, Limit: f.Limit, Offset: f.Offset})
	if st.Snapshot != nil {
		s.Checksum = st.Snapshot.Checksum
	}
	for _, b := range st.Bindings {
		s.ExportStatus = append(s.ExportStatus, exportStatus(b))
	}
	return s
}

// exportStatus words a binding's report as the inventory's status does.
func exportStatus(b inventory.BindingReport) ExportStatus {
	family, name, _ := strings.Cut(b.Key, "/")
	out := ExportStatus{SinkKind: sinkKinds[family], SinkName: name, ExportedCount: b.Exported, Status: "Pending"}
	if !b.LastExport.IsZero() {
		at := b.LastExport
		out.LastExportTime, out.Status = &at, "Exported"
	}
	if b.Err != "" {
		out.Status, out.Message = "ExportFailed", b.Err
	}
	return out
}

// sinkKinds are the kinds behind a binding key's family.
var sinkKinds = map[string]string{"snapshot": "KollectSnapshotSink", "database": "KollectDatabaseSink", "event": "KollectEventSink"}
