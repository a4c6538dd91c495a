package topology

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Ranges that keep a scenario's simulated time and memory finite, checked
// over every field of the decoded scenario (ranges): a single timeout,
// delay or fault window of 2562047h, or an arrival rate of 1e-11/s (one
// request per 3,000 years), overflowed the simulator's clock, which
// panicked; a count of 1e9 clients or fan-out calls ran out of memory.
const (
	// MaxDuration bounds every duration in a scenario (417 days): far
	// beyond any run one simulates, and small enough that the sums the
	// simulator forms (window, deadlines, retries, queued work) stay far
	// from where a time.Duration overflows (292 years).
	MaxDuration = 10_000 * time.Hour
	// MinRate is the smallest positive arrival rate: one request per
	// MaxDuration.
	MinRate = 1 / (10_000 * 3600.0)
	// MaxIntervals bounds the rows of a run's time series over its arrival
	// window (duration / interval).
	MaxIntervals = 1_000_000
	// DefaultMaxDrain is limits.max_drain when the scenario gives none.
	DefaultMaxDrain = time.Hour
)

// maxCounts bounds the count fields by key: each is something the
// simulator or the emulated services hold one of in memory.
var maxCounts = map[string]int{
	"workers":       1_000_000, // a worker pool each
	"clients":       1_000_000, // closed-loop users
	"fanout":        10_000,    // calls per attempt
	"wait_for":      10_000,
	"max_attempts":  1_000,
	"queue":         100_000_000,
	"max_inflight":  100_000_000,
	"max_in_flight": 100_000_000,
}

var (
	durationKind = reflect.TypeFor[time.Duration]()
)

// ranges walks the scenario and reports every duration, count and rate
// out of range, by its path.
func (v *validator) ranges() {
	v.names()
	v.rangesOf(reflect.ValueOf(v.sc).Elem(), "")
	sc := v.sc
	// The series has a row per interval of the window and of the drain.
	if span := sc.Duration + max(sc.Limits.MaxDrain, 0); sc.Interval > 0 && sc.Duration > 0 && span/sc.Interval > MaxIntervals {
		v.add("interval", "must be ≥ (duration + limits.max_drain) / %d (%v), so the time series holds at most %d rows, got %v", MaxIntervals, span/MaxIntervals, MaxIntervals, sc.Interval)
	}
	for i, s := range sc.Services {
		// An attempt's slowdown is this times the others in service.
		if d := s.SlowdownPerInflight; d > 0 && d <= MaxDuration && s.Workers > 1 && d > MaxDuration/time.Duration(s.Workers) {
			v.add(fmt.Sprintf("services[%d].slowdown_per_inflight", i), "must be ≤ %v / workers (%v), got %v", MaxDuration, MaxDuration/time.Duration(s.Workers), d)
		}
	}
}

func (v *validator) rangesOf(x reflect.Value, path string) {
	switch {
	case x.Type() == durationKind:
		if d := time.Duration(x.Int()); d > MaxDuration || d < -MaxDuration {
			v.add(path, "must be at most %v (%.0f days), got %v", MaxDuration, MaxDuration.Hours()/24, d)
		}
		return
	}
	switch x.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !x.IsNil() {
			v.rangesOf(x.Elem(), path)
		}
	case reflect.Struct:
		for name, idx := range structFields(x.Type()) {
			f, err := x.FieldByIndexErr(idx)
			if err != nil {
				continue
			}
			v.rangesOf(f, joinPath(path, name))
		}
	case reflect.Slice:
		if x.Type().Elem().Kind() == reflect.String {
			return
		}
		for i := range x.Len() {
			v.rangesOf(x.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		key := path[strings.LastIndexByte(path, '.')+1:]
		if limit, ok := maxCounts[key]; ok && x.Int() > int64(limit) {
			v.add(path, "must be at most %d, got %d", limit, x.Int())
		}
	case reflect.Float64:
		key := path[strings.LastIndexByte(path, '.')+1:]
		if r := x.Float(); key == "rate" && r > 0 && r < MinRate {
			v.add(path, "must be 0 or at least %.3g (one request per %v), got %g", MinRate, MaxDuration, r)
		}
	}
}
