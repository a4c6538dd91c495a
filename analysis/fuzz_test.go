package analysis

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// ReadRows never panics, and what it accepts survives a write/read round trip.
func FuzzReadRows(f *testing.F) {
	var b bytes.Buffer
	WriteRows(&b, []Row{{Unit: Unit{Index: 3, Point: 1, Replica: 2}, Param: "workload.rate", Value: "100", VariantName: "budget", Seed: 9,
		Measures: Measures{Status: "complete", Offered: 10, GoodputRPS: 1.5, P99Ms: 0.25}}})
	f.Add(b.String())
	f.Add("unit\n")
	f.Add(strings.Replace(b.String(), "1.5", "NaN", 1))
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := ReadRows("fuzz.csv", strings.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteRows(&out, rows); err != nil {
			t.Fatal(err)
		}
		back, err := ReadRows("again.csv", &out)
		if err != nil {
			t.Fatalf("re-reading written rows: %v", err)
		}
		if len(rows) == 0 && len(back) == 0 {
			return
		}
		// NaN ≠ NaN: compare the written forms instead of the values.
		var again bytes.Buffer
		WriteRows(&again, back)
		var first bytes.Buffer
		WriteRows(&first, rows)
		if !bytes.Equal(first.Bytes(), again.Bytes()) {
			t.Errorf("round trip changed the rows:\n%s\nvs\n%s", first.Bytes(), again.Bytes())
		}
	})
}

// ParseVariant never panics, and what it accepts round-trips through String.
func FuzzParseVariant(f *testing.F) {
	for _, s := range []string{"a:b=1", "a=f.yaml", "a:b=1,c=2", ":", "=", "baseline:x=1", "a:b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := ParseVariant(in)
		if err != nil {
			return
		}
		back, err := ParseVariant(v.String())
		if err != nil || !reflect.DeepEqual(back, v) {
			t.Errorf("ParseVariant(%q) = %+v; its String %q parses to %+v, %v", in, v, v.String(), back, err)
		}
	})
}

// ParseRange never panics and never returns more than maxRangePoints values.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"1:10:1", "1ms:1s:1ms", "0.1:0.3:0.1", "1:1:0", "-5:5:2.5", "1e308:1e308:1e-308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		vs, err := ParseRange(in)
		if err == nil && (len(vs) == 0 || len(vs) > maxRangePoints) {
			t.Errorf("ParseRange(%q) gave %d values", in, len(vs))
		}
	})
}
