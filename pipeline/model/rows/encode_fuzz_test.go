package rows

import (
	"encoding/json"
	"testing"
)

// FuzzEncodeIsEncodingJSON decodes arbitrary JSON into attributes and
// checks that the canonical encoder writes byte for byte what
// encoding/json writes for the same row.
func FuzzEncodeIsEncodingJSON(f *testing.F) {
	f.Add("ns", "name", `{"a":1,"b":[true,null,"x"],"c":{"z":"<&>"}}`)
	f.Add("nul\x00", "bad\xff", `{"\u2028":"\ud800","e":1e400}`)
	f.Add("", "", `{"n":-0.0000001,"big":123456789012345678901234567890}`)
	f.Fuzz(func(t *testing.T, ns, name, attrs string) {
		var a map[string]any
		if json.Unmarshal([]byte(attrs), &a) != nil {
			return
		}
		r := Row{Origin: &Origin{TargetNamespace: ns, TargetName: name, Version: "v1", Kind: "K"}, Namespace: ns, Name: name, UID: name, Attributes: AttributesOf(a)}
		want, err := json.Marshal(r)
		if err != nil {
			return
		}
		got, _, err := encode(&r)
		if err != nil {
			t.Fatalf("encode failed where encoding/json did not: %v", err)
		}
		if string(got) != string(want) {
			t.Fatalf("encode:\n%s\nencoding/json:\n%s", got, want)
		}
	})
}
