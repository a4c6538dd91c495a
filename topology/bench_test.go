package topology

import (
	"os"
	"testing"
)

// BenchmarkParse measures loading the architecture example with one
// override: the cost a sweep pays per point.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/architecture.yaml")
	if err != nil {
		b.Fatal(err)
	}
	sets := []string{"services.orders.workers=8"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("testdata/architecture.yaml", data, sets); err != nil {
			b.Fatal(err)
		}
	}
}
