package k8s

import (
	"io"
	"testing"
)

func BenchmarkRender(b *testing.B) {
	o := baseOptions("sweep", 16)
	b.ReportAllocs()
	for b.Loop() {
		if err := Render(io.Discard, o); err != nil {
			b.Fatal(err)
		}
	}
}
