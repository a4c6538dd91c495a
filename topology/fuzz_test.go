package topology

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkPositioned fails unless err is Problems and every problem names a
// position: a file and line, or the --set it came from.
func checkPositioned(t *testing.T, err error) {
	t.Helper()
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %T is not Problems: %v", err, err)
	}
	if len(ps) == 0 {
		t.Fatal("empty Problems returned as an error")
	}
	for _, p := range ps {
		if p.File == "" || p.Line <= 0 && !strings.HasPrefix(p.File, "--set ") {
			t.Errorf("problem without a position: %#v", p)
		}
		if p.Msg == "" {
			t.Errorf("problem without a message: %#v", p)
		}
	}
}

// addScenarioSeeds adds every scenario file under testdata as a seed.
func addScenarioSeeds(f *testing.F, add func(data []byte)) {
	files, _ := filepath.Glob("testdata/*.yaml")
	more, _ := filepath.Glob("testdata/broken/*.yaml")
	for _, name := range append(files, more...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		add(data)
	}
}

// FuzzParse checks that no input makes Parse panic and that every rejected
// input is explained with positions. An accepted scenario is one the run
// can build, from the very configs it carries (checkBuilds).
func FuzzParse(f *testing.F) {
	addScenarioSeeds(f, func(data []byte) { f.Add(data) })
	f.Add([]byte("a: *x\n"))
	f.Add([]byte("x: &a [*a]\n"))
	f.Add([]byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse("testdata/fuzz.yaml", data, nil)
		if err != nil {
			checkPositioned(t, err)
			return
		}
		if sc.Duration <= 0 || len(sc.Services) == 0 || sc.Service(sc.Workload.Entry) == nil {
			t.Fatalf("accepted an invalid scenario: %+v", sc)
		}
		checkBuilds(t, sc)
	})
}

// FuzzSet applies one fuzzed override to a valid scenario: it must never
// panic, and when it is rejected the problems must be positioned.
func FuzzSet(f *testing.F) {
	for _, s := range []string{
		"services.back.workers=4", "workload.schedule.0.rate=900", "seed=7", "duration=30s",
		"services.front.calls.back.budget.ratio=0.1", "services.front.calls.0.retry.on=[timeout,error]",
		"services.front.calls.back.retry.preset=grpc", "faults.0.capacity=0.5", "services.2.name=x",
		"services.front.calls.back.budget={preset: finagle, min_per_sec: 0}", "services.front.calls.back.breaker.kind=rate",
		"services.back.queue=null", "workload=1", "=", "services..workers=1", "limits.max_events=2e9",
	} {
		f.Add(s)
	}
	data, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, set string) {
		sc, err := Parse("testdata/base.yaml", data, []string{set})
		if err != nil {
			checkPositioned(t, err)
			return
		}
		if sc.Service("front") == nil && sc.Service("back") == nil {
			t.Fatalf("accepted scenario lost its services: %+v", sc.Services)
		}
		checkBuilds(t, sc)
	})
}
