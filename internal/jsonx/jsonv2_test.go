//go:build goexperiment.jsonv2

package jsonx

import (
	jsonv2 "encoding/json/v2"
	"testing"
)

// BenchmarkJSONv2Unmarshal20MB is BenchmarkStringMembers20MB's decoding of
// a 20 MB write's arguments done by encoding/json/v2, which Go 1.26 has
// only with GOEXPERIMENT=jsonv2:
//
//	GOEXPERIMENT=jsonv2 go test -run - -bench 'JSONv2|StringMembers|EncodingJSON' ./internal/jsonx
func BenchmarkJSONv2Unmarshal20MB(b *testing.B) {
	args := bigArgs(b)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		var v struct{ Path, Content, Encoding string }
		if err := jsonv2.Unmarshal(args, &v); err != nil {
			b.Fatal(err)
		}
	}
}
