package policies

import "testing"

// FuzzParseOutcome checks that ParseOutcome accepts exactly the names String
// produces and that ParseOutcomeSet agrees with it.
func FuzzParseOutcome(f *testing.F) {
	for _, n := range outcomeNames {
		f.Add(n)
	}
	f.Add("")
	f.Add("Timeout")
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOutcome(s)
		if err != nil {
			if _, serr := ParseOutcomeSet([]string{s}, 0); serr == nil {
				t.Fatalf("ParseOutcomeSet accepted %q that ParseOutcome rejects", s)
			}
			return
		}
		if o.String() != s {
			t.Fatalf("ParseOutcome(%q) = %v, whose name is %q", s, o, o.String())
		}
		set, err := ParseOutcomeSet([]string{s}, 0)
		if err != nil || !set.Has(o) || set != OutcomeSet(0).With(o) {
			t.Fatalf("ParseOutcomeSet([%q]) = %b, %v", s, set, err)
		}
	})
}

// FuzzParseJitter checks ParseJitter round-trips through String.
func FuzzParseJitter(f *testing.F) {
	for _, n := range jitterNames {
		f.Add(n)
	}
	f.Add("")
	f.Add("FULL")
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJitter(s)
		if err != nil {
			return
		}
		if s == "" {
			if j != NoJitter {
				t.Fatalf(`ParseJitter("") = %v, want none`, j)
			}
			return
		}
		if j.String() != s {
			t.Fatalf("ParseJitter(%q) = %v, whose name is %q", s, j, j.String())
		}
	})
}

func TestCountsAsFailure(t *testing.T) {
	want := map[Outcome]bool{Unavailable: true, Timeout: true, Error: true}
	for o := OK; o < numOutcomes; o++ {
		if got := CountsAsFailure(o); got != want[o] {
			t.Errorf("CountsAsFailure(%v) = %v, want %v", o, got, want[o])
		}
	}
}
