package rows

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"
)

// upstreamRow is upstream's row struct: encoding/json writes the
// canonical JSON for it.
type upstreamRow struct {
	TargetNamespace string     `json:"targetNamespace"`
	TargetName      string     `json:"targetName"`
	Namespace       string     `json:"namespace"`
	Name            string     `json:"name"`
	Group           string     `json:"group,omitempty"`
	Version         string     `json:"version"`
	Kind            string     `json:"kind"`
	UID             string     `json:"uid"`
	Attributes      Attributes `json:"attributes"`
}

// TestEncodeIsEncodingJSON: the hand-written encoder writes byte for byte
// what encoding/json writes for upstream's row struct, for plain and
// awkward strings and every kind of attribute value; so does marshalling a
// row, built or not.
func TestEncodeIsEncodingJSON(t *testing.T) {
	awkward := []string{"", "plain", `quo"te`, `back\slash`, "<b>&amp;</b>", "tab\there", "new\nline", "nul\x00",
		"ünïcödé", "emoji 🚀", "line sep \u2028 para \u2029", "bad utf8 \xff\xfe", "\x7f"}
	values := []any{nil, true, false, int64(-42), int64(1) << 62, 7, int32(3), 1.5, 1e21, 0.000001, float64(3),
		"text", []any{"a", int64(1), nil}, map[string]any{"z": int64(1), "a": []any{map[string]any{"k": "<v>"}}},
		[]string{"x"}, map[string]string{"b": "c"}}
	cases := []upstreamRow{
		{TargetNamespace: "default", TargetName: "t", Namespace: "ns", Name: "n", Version: "v1", Kind: "ConfigMap", UID: "u"},
		{TargetNamespace: "default", TargetName: "t", Namespace: "", Name: "n", Group: "apps", Version: "v1", Kind: "Deployment", UID: "u",
			Attributes: AttributesOf(map[string]any{})},
	}
	for i, s := range awkward {
		cases = append(cases, upstreamRow{TargetNamespace: s, TargetName: s, Namespace: s, Name: s, Group: s, Version: s, Kind: s, UID: s,
			Attributes: AttributesOf(map[string]any{s: s, "v": values[i%len(values)]})})
	}
	attrs := map[string]any{}
	for i, v := range values {
		attrs[string(rune('a'+i))] = v
	}
	cases = append(cases, upstreamRow{Name: "all-values", Attributes: AttributesOf(attrs)})
	for _, u := range cases {
		want, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		r := Row{Origin: &Origin{TargetNamespace: u.TargetNamespace, TargetName: u.TargetName, Group: u.Group, Version: u.Version, Kind: u.Kind},
			Namespace: u.Namespace, Name: u.Name, UID: u.UID}
		own, _, err := encode(&r, u.Attributes)
		if err != nil {
			t.Fatal(err)
		}
		withOwn := r
		withOwn.raw = own
		if got := withOwn.JSON(); string(got) != string(want) || withOwn.Size() != len(want) {
			t.Errorf("encode\n got %s (size %d)\nwant %s", got, withOwn.Size(), want)
		}
		if u.Attributes == nil { // a row New did not build has none; New gives a row none as {}
			if m, err := json.Marshal(r); err != nil || string(m) != string(want) {
				t.Errorf("marshal a row New did not build\n got %s (%v)\nwant %s", m, err, want)
			}
			continue
		}
		built, err := New(r, u.Attributes)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := json.Marshal(built); err != nil || string(m) != string(want) || string(built.JSON()) != string(want) {
			t.Errorf("marshal a built row\n got %s (%v)\nwant %s", m, err, want)
		}
		// Decoded attributes hold the values given (invalid UTF-8 aside,
		// which the JSON holds as U+FFFD).
		if got, want := generic(t, mustMarshal(t, built.Attributes())), generic(t, mustMarshal(t, u.Attributes)); !reflect.DeepEqual(got, want) {
			t.Errorf("decoded attributes\n got %v\nwant %v", got, want)
		}
	}
	if _, _, err := encode(&Row{Origin: &Origin{}}, AttributesOf(map[string]any{"ch": make(chan int)})); err == nil {
		t.Error("an unencodable attribute gave no error")
	}
}

// TestARowKeepsItsObjectsStringsInItsJSON: a row's namespace, name and UID
// are read from its JSON when the JSON holds them as they are, and keep
// their own copy when it escaped them; either way they are the strings
// the row was built with.
func TestARowKeepsItsObjectsStringsInItsJSON(t *testing.T) {
	cases := []struct {
		name, namespace, uid string
		shared               bool
	}{
		{"cart", "shop", "1b2c3d4e-0000-4000-8000-00000000abcd", true},
		{"quo\"te", "<ns>", "bad utf8 \xff", false},
		{"ünï", "", "u", true}, // not ASCII, but written as it is; no namespace
	}
	for _, tc := range cases {
		in := Row{Origin: &Origin{TargetNamespace: "t", TargetName: "n", Version: "v1", Kind: "K"}, Namespace: tc.namespace, Name: tc.name, UID: tc.uid}
		r, err := New(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw := r.raw
		for _, f := range []struct{ got, want string }{{r.Namespace, tc.namespace}, {r.Name, tc.name}, {r.UID, tc.uid}} {
			if f.got != f.want {
				t.Errorf("row string %q, built with %q", f.got, f.want)
			}
			if f.want == "" {
				continue
			}
			p, lo := uintptr(unsafe.Pointer(unsafe.StringData(f.got))), uintptr(unsafe.Pointer(unsafe.StringData(raw)))
			if inRaw := p >= lo && p < lo+uintptr(len(raw)); inRaw != tc.shared {
				t.Errorf("%q: kept in the row's JSON = %v, want %v", f.want, inRaw, tc.shared)
			}
		}
	}
}

// TestEqualComparesTheWholeJSON: a row keeps only its own part of its
// JSON, so rows of two targets or kinds with the same object and
// attributes share it; they are still different rows.
func TestEqualComparesTheWholeJSON(t *testing.T) {
	build := func(o Origin) *Row {
		r, err := New(Row{Origin: &o, Namespace: "ns", Name: "n", UID: "u"}, Attributes{{Name: "a", Value: "b"}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base := Origin{TargetNamespace: "t", TargetName: "n", Version: "v1", Kind: "K"}
	a := build(base)
	if b := build(base); !a.Equal(b) || a.Sum() != b.Sum() {
		t.Error("two rows built alike are not equal")
	}
	for _, o := range []Origin{{TargetNamespace: "u", TargetName: "n", Version: "v1", Kind: "K"}, {TargetNamespace: "t", TargetName: "m", Version: "v1", Kind: "K"},
		{TargetNamespace: "t", TargetName: "n", Group: "g", Version: "v1", Kind: "K"}, {TargetNamespace: "t", TargetName: "n", Version: "v2", Kind: "K"},
		{TargetNamespace: "t", TargetName: "n", Version: "v1", Kind: "L"}} {
		b := build(o)
		if b.raw != a.raw {
			t.Fatalf("the rows' own JSON differs: %s, %s", a.raw, b.raw)
		}
		if a.Equal(b) || b.Equal(a) || a.Sum() == b.Sum() || string(a.JSON()) == string(b.JSON()) {
			t.Errorf("a row of %+v equals one of %+v", o, base)
		}
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// generic decodes JSON as encoding/json does into an any.
func generic(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
