package rows

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzEncodeIsEncodingJSON decodes arbitrary JSON into attributes and
// checks that a built row's JSON is byte for byte what encoding/json
// writes for upstream's row, and that rows of one Origin compare by their
// own strings as their JSON texts compare.
func FuzzEncodeIsEncodingJSON(f *testing.F) {
	f.Add("ns", "name", `{"a":1,"b":[true,null,"x"],"c":{"z":"<&>"}}`)
	f.Add("nul\x00", "bad\xff", `{"\u2028":"\ud800","e":1e400}`)
	f.Add("", "", `{"n":-0.0000001,"big":123456789012345678901234567890}`)
	f.Add(`a"`, `a\`, `{}`)
	f.Fuzz(func(t *testing.T, ns, name, attrs string) {
		var a map[string]any
		if json.Unmarshal([]byte(attrs), &a) != nil {
			return
		}
		origin := &Origin{TargetNamespace: ns, TargetName: name, Group: name, Version: "v1", Kind: "K"}
		var built [2][]byte
		for i, id := range [2][2]string{{ns, name}, {name, ns}} {
			want, err := json.Marshal(upstreamRow{TargetNamespace: ns, TargetName: name, Namespace: id[0], Name: id[1], Group: name,
				Version: "v1", Kind: "K", UID: name, Attributes: AttributesOf(a)})
			if err != nil {
				return
			}
			r, err := New(Row{Origin: origin, Namespace: id[0], Name: id[1], UID: name}, AttributesOf(a))
			if err != nil {
				t.Fatalf("encode failed where encoding/json did not: %v", err)
			}
			if got := r.JSON(); string(got) != string(want) || r.Size() != len(want) {
				t.Fatalf("encode (size %d):\n%s\nencoding/json:\n%s", r.Size(), got, want)
			}
			built[i] = r.JSON()
			if got, want := generic(t, mustMarshal(t, r.Attributes())), generic(t, r.AttributesJSON()); !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded attributes %v, the JSON's %v", got, want)
			}
			if i == 1 {
				first, _ := New(Row{Origin: origin, Namespace: ns, Name: name, UID: name}, AttributesOf(a))
				var order byJSON
				if got, want := order.compare(first, r), bytes.Compare(built[0], built[1]); got != want {
					t.Fatalf("rows of one origin compare %d, their JSON %d:\n%s\n%s", got, want, built[0], built[1])
				}
			}
		}
	})
}
