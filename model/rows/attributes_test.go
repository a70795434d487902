package rows

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

func TestAttributes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Attributes
		json string // the row's attributes once built
	}{
		{"none", nil, `{}`},
		{"empty", Attributes{}, `{}`},
		{"in order", Attributes{{"a", int64(1)}, {"b", "x"}}, `{"a":1,"b":"x"}`},
		{"out of order", Attributes{{"b", "x"}, {"a", int64(1)}, {"B", nil}}, `{"B":null,"a":1,"b":"x"}`},
		{"a name twice: the last value", Attributes{{"a", int64(1)}, {"b", true}, {"a", int64(2)}}, `{"a":2,"b":true}`},
		{"nested and escaped", Attributes{{"<k>", map[string]any{"z": []any{"&"}, "a": 1.5}}}, `{"\u003ck\u003e":{"a":1.5,"z":["\u0026"]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			r, err := New(Row{Name: "n"}, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tc.in, in) {
				t.Fatalf("New changed the caller's attributes: %v", tc.in)
			}
			var env struct{ Attributes json.RawMessage }
			if err := json.Unmarshal(r.JSON(), &env); err != nil {
				t.Fatal(err)
			}
			if string(env.Attributes) != tc.json {
				t.Fatalf("JSON %s, want %s", env.Attributes, tc.json)
			}
			if m := r.AttributesJSON(); m != tc.json {
				t.Fatalf("AttributesJSON %s, want %s", m, tc.json)
			}
			want := Attributes{}
			if tc.in != nil {
				want = normalize(tc.in)
			}
			if got := r.Attributes(); !reflect.DeepEqual(got, want) { // decoded as they were given
				t.Fatalf("Attributes %#v, want %#v", got, want)
			}
			m, err := json.Marshal(want) // the same as the canonical row
			if err != nil || string(m) != tc.json {
				t.Fatalf("MarshalJSON %s (%v), want %s", m, err, tc.json)
			}
			var back Attributes
			if err := json.Unmarshal(m, &back); err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(back); string(b) != tc.json || !back.Sorted() {
				t.Fatalf("round trip %s, want %s", b, tc.json)
			}
			for _, a := range want {
				if v, ok := r.Attributes().Lookup(a.Name); !ok || !reflect.DeepEqual(v, a.Value) {
					t.Fatalf("Lookup(%q) = %v, %v", a.Name, v, ok)
				}
			}
			if _, ok := r.Attributes().Lookup("absent"); ok || r.Attributes().Get("absent") != nil {
				t.Fatal("an absent name was found")
			}
		})
	}
	var null Attributes
	if err := json.Unmarshal([]byte("null"), &null); err != nil || null != nil {
		t.Fatalf("null: %v %v", null, err)
	}
	with := Attributes{{"a", 1}, {"c", 3}}.With(Attribute{"b", 2}).With(Attribute{"c", 4}).With(Attribute{"0", 0})
	if b, _ := json.Marshal(with); string(b) != `{"0":0,"a":1,"b":2,"c":4}` {
		t.Fatalf("With: %s", b)
	}
	if AttributesOf(nil) != nil || AttributesOf(map[string]any{"b": 1, "a": 2})[0].Name != "a" {
		t.Fatal("AttributesOf")
	}
}
