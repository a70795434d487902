package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDiffStatusesNamesTheFieldsThatMoved(t *testing.T) {
	read := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := read(`{
	  "a/one": {"collectedCount": 10, "conditions": [{"type": "Ready", "message": "collecting 10"}, {"type": "Synced", "message": "x"}]},
	  "a/two": {"collectedCount": 10, "conditions": [{"type": "Ready", "message": "collecting 10"}]},
	  "a/gone": {"collectedCount": 1}}`)
	after := read(`{
	  "a/one": {"collectedCount": 10, "conditions": [{"type": "Synced", "message": "x"}, {"type": "Ready", "message": "collecting 10"}]},
	  "a/two": {"collectedCount": 0, "conditions": [{"type": "Ready", "message": "collecting 0"}], "new": true},
	  "a/born": {"collectedCount": 1}}`)
	got := diffStatuses(before, after)
	want := StatusChanges{Objects: 1, Fields: map[string]int{"collectedCount": 1, "conditions[Ready].message": 1, "new": 1},
		Example: map[string]string{"collectedCount": "a/two: 10 → 0", "conditions[Ready].message": "a/two: collecting 10 → collecting 0", "new": "a/two: <nil> → true"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v (conditions in another order are no change)", got, want)
	}
	if got := diffStatuses(before, after, "collectedCount", "conditions[Ready].message", "new"); got.Objects != 0 {
		t.Fatalf("with every moved field ignored: %+v", got)
	}
}
