package target

import (
	"fmt"
	"maps"
	"testing"

	"kollect.dev/kollect/model/rows"
)

func seriesRows(t *testing.T, attrs ...map[string]any) map[objKey]*rows.Row {
	t.Helper()
	out := map[objKey]*rows.Row{}
	for i, a := range attrs {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "ns", TargetName: "t", Version: "v1", Kind: "Deployment"}, Namespace: "ns", Name: fmt.Sprint(i),
			UID: fmt.Sprint(i)}, rows.AttributesOf(a))
		if err != nil {
			t.Fatal(err)
		}
		out[objKey{key: fmt.Sprint(i)}] = r
	}
	return out
}

func TestComputeSeries(t *testing.T) {
	rs := seriesRows(t,
		map[string]any{"replicas": int64(3), "ratio": 0.5, "image": "web:1", "ready": true},
		map[string]any{"replicas": int64(2), "image": "web:1", "tier": int64(1)},
		map[string]any{"replicas": int64(5), "image": "api:2", "labels": map[string]any{"a": "b"}},
		map[string]any{"image": "none"},
	)
	for _, tc := range []struct {
		name    string
		metrics []Metric
		want    map[string]float64
		tuples  map[string]string // series → tuples "values=sum;…" in order
	}{
		{"no metrics: a sum per numeric attribute", nil,
			map[string]float64{ObjectCount: 4, "replicas": 10, "ratio": 0.5, "tier": 1}, nil},
		{"declared metrics, one labelled", []Metric{{Name: "replicas_total", Path: "replicas"}, {Name: "by_image", Path: "replicas", Labels: []string{"image", "tier"}},
			{Name: "not_numeric", Path: "image"}},
			map[string]float64{ObjectCount: 4, "replicas_total": 10, "by_image": 10, "not_numeric": 0},
			map[string]string{"by_image": "[api:2 ]=5;[web:1 ]=3;[web:1 1]=2;"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := computeSeries(rs, tc.metrics)
			if !maps.Equal(s.Values, tc.want) {
				t.Errorf("values %v, want %v", s.Values, tc.want)
			}
			for name, want := range tc.tuples {
				got := ""
				for _, tu := range s.Labeled[name].Tuples {
					got += fmt.Sprintf("%v=%v;", tu.Values, tu.Sum)
				}
				if got != want {
					t.Errorf("%s tuples %s, want %s", name, got, want)
				}
			}
			if tc.tuples == nil && s.Labeled != nil {
				t.Errorf("labelled series without labels: %v", s.Labeled)
			}
		})
	}
}

func TestLabelledSeriesAreCapped(t *testing.T) {
	var attrs []map[string]any
	for i := range MaxTuples + 7 {
		attrs = append(attrs, map[string]any{"replicas": int64(1), "image": fmt.Sprintf("img:%03d", i)})
	}
	s := computeSeries(seriesRows(t, attrs...), []Metric{{Name: "by_image", Path: "replicas", Labels: []string{"image"}}})
	l := s.Labeled["by_image"]
	if len(l.Tuples) != MaxTuples || l.Dropped != 7 || l.Tuples[0].Values[0] != "img:000" || s.Values["by_image"] != float64(MaxTuples+7) {
		t.Fatalf("%d tuples, %d dropped, first %v, sum %v", len(l.Tuples), l.Dropped, l.Tuples[0].Values, s.Values["by_image"])
	}
}

func TestLabelValues(t *testing.T) {
	for v, want := range map[any]string{nil: "", "x": "x", true: "true", int64(3): "3", 2.5: "2.5"} {
		if got := labelValue(v); got != want {
			t.Errorf("labelValue(%v) = %q, want %q", v, got, want)
		}
	}
	if got := labelValue([]any{"a", int64(1)}); got != `["a",1]` {
		t.Errorf("a list: %q", got)
	}
}

// TestMayHoldNumbers: the check that spares decoding never misses a
// number value.
func TestMayHoldNumbers(t *testing.T) {
	for _, tc := range []struct {
		json string
		want bool
	}{
		{`{}`, false},
		{`{"image":"none","v":"x"}`, false},
		{`{"a":null,"b":true,"c":[],"d":{"e":"f"}}`, false},
		{`{"n":0}`, true},
		{`{"n":-1.5}`, true},
		{`{"a":"b","n":1e3}`, true},
		{`{"image":"web:1"}`, true}, // a false yes: decoded, no number found
	} {
		if got := mayHoldNumbers(tc.json); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.json, got, tc.want)
		}
	}
}
