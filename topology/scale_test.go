package topology

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestProblemsAreBounded: a file of thousands of unknown keys reports the
// first maxProblems and counts the rest, and a huge key is quoted cut
// short (issue 17, item 9: 50 MB of unknown keys printed 4.5M lines).
func TestProblemsAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: many\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "unknown%d: 1\n", i)
	}
	fmt.Fprintf(&b, "? %s\n: 1\n", strings.Repeat("k", 1<<20)) // an explicit key: no 1024-byte limit
	_, err := Parse("many.yaml", []byte(b.String()), nil)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse: %v, want Problems", err)
	}
	if len(ps) != maxProblems+1 {
		t.Fatalf("%d problems, want %d and a count of the rest: %.500v", len(ps), maxProblems+1, err)
	}
	// 5,001 unknown keys and 4 missing required keys, 200 shown.
	if last := ps[len(ps)-1].String(); last != "many.yaml: and 4,805 more problems (fix these first)" {
		t.Errorf("last problem %q", last)
	}
	if n := len(err.Error()); n > 64<<10 {
		t.Errorf("the message is %d bytes long", n)
	}
	_, err = Parse("long.yaml", []byte("? "+strings.Repeat("k", 1<<20)+"\n: 1\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "long.yaml:1: "+strings.Repeat("k", maxShown)+"…: unknown key") || len(err.Error()) > 4096 {
		t.Errorf("a 1 MiB key: %.300v", err)
	}
}

// variantsScenario is a valid scenario with n variants.
func variantsScenario(n int) []byte {
	var b strings.Builder
	b.WriteString(`name: variants
duration: 10s
workload: {entry: api, rate: 10}
services:
  - {name: api, workers: 4, service_time: {dist: constant, value: 1ms}, calls: [{to: db, timeout: 100ms}]}
  - {name: db, workers: 4, service_time: {dist: constant, value: 1ms}}
variants:
`)
	for i := range n {
		fmt.Fprintf(&b, "  - {name: v%d, set: [services.api.workers=%d, services.api.calls.db.timeout=%dms]}\n", i, i%50+1, i%90+10)
	}
	return []byte(b.String())
}

// BenchmarkParseVariants validates scenarios of 1,000 and 8,000 variants.
// Validation is linear: the time per variant (ns/variant) is the same at
// both sizes. Each variant was checked on its own copy of the whole tree,
// variants included, so 8,000 variants took over a minute.
func BenchmarkParseVariants(b *testing.B) {
	for _, n := range []int{1000, 8000} {
		data := variantsScenario(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse("variants.yaml", data, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/variant")
		})
	}
}
