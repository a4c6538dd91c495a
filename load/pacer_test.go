package load

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestConstantPacer(t *testing.T) {
	p := ConstantPacer{Rate: 4, Duration: time.Second}
	for _, tc := range []struct {
		n    uint64
		at   time.Duration
		want bool
	}{
		{0, 0, true}, {1, 250 * time.Millisecond, true}, {3, 750 * time.Millisecond, true}, {4, time.Second, false},
	} {
		at, ok := p.At(tc.n)
		if at != tc.at || ok != tc.want {
			t.Errorf("At(%d) = %v, %v; want %v, %v", tc.n, at, ok, tc.at, tc.want)
		}
	}
	if _, ok := (ConstantPacer{Rate: 0, Duration: time.Second}).At(0); ok {
		t.Error("a zero rate scheduled a request")
	}
}

func TestStepPacer(t *testing.T) {
	// 10/s for 1 s, nothing for 1 s, then 100/s: request 10 is the first
	// of the third step, at 2 s; request 20 is 10 requests into it.
	p, err := NewStepPacer(10, []Step{{At: time.Second, Rate: 0}, {At: 2 * time.Second, Rate: 100}}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n  uint64
		at time.Duration
		ok bool
	}{
		{0, 0, true}, {5, 500 * time.Millisecond, true}, {9, 900 * time.Millisecond, true},
		{10, 2 * time.Second, true}, {20, 2100 * time.Millisecond, true}, {109, 2990 * time.Millisecond, true}, {110, 3 * time.Second, false},
	} {
		at, ok := p.At(tc.n)
		if d := at - tc.at; d < -time.Microsecond || d > time.Microsecond || ok != tc.ok {
			t.Errorf("At(%d) = %v, %v; want %v, %v", tc.n, at, ok, tc.at, tc.ok)
		}
	}
	// The count due by t is the integral of the rate, whatever the steps.
	count := 0
	for n := uint64(0); ; n++ {
		if _, ok := p.At(n); !ok {
			break
		}
		count++
	}
	if count != 110 {
		t.Errorf("scheduled %d requests, want 10 + 0 + 100", count)
	}
	if _, err := NewStepPacer(-1, nil, time.Second); err == nil {
		t.Error("a negative rate was accepted")
	}
}

// TestPoissonPacer checks the count of arrivals against the Poisson law:
// over 100 s at 50/s the count has mean 5000 and standard deviation √5000
// ≈ 71; 4σ bounds a false failure at 6e-5. Gaps must have a coefficient of
// variation near 1 (exponential), unlike an even pacer's 0.
func TestPoissonPacer(t *testing.T) {
	p, err := NewPoissonPacer(50, nil, 100*time.Second, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	var prev time.Duration
	var sum, sumSq float64
	for ; ; n++ {
		at, ok := p.At(n)
		if !ok {
			break
		}
		if at < prev {
			t.Fatalf("At(%d) = %v went back from %v", n, at, prev)
		}
		g := (at - prev).Seconds()
		sum += g
		sumSq += g * g
		prev = at
	}
	if math.Abs(float64(n)-5000) > 4*math.Sqrt(5000) {
		t.Errorf("%d arrivals in 100 s at 50/s, want 5000 ± 283", n)
	}
	mean := sum / float64(n)
	cv := math.Sqrt(sumSq/float64(n)-mean*mean) / mean
	if cv < 0.9 || cv > 1.1 {
		t.Errorf("gap coefficient of variation %.3f, want ≈ 1", cv)
	}
	// The same seed gives the same schedule.
	q, _ := NewPoissonPacer(50, nil, 100*time.Second, rand.New(rand.NewPCG(1, 2)))
	p2, _ := NewPoissonPacer(50, nil, 100*time.Second, rand.New(rand.NewPCG(1, 2)))
	for i := range uint64(100) {
		a, _ := q.At(i)
		b, _ := p2.At(i)
		if a != b {
			t.Fatalf("At(%d): %v vs %v with the same seed", i, a, b)
		}
	}
}

func ExampleConstantPacer() {
	p := ConstantPacer{Rate: 4, Duration: time.Second}
	for n := uint64(0); ; n++ {
		at, ok := p.At(n)
		if !ok {
			break
		}
		fmt.Println(n, at)
	}
	// Output:
	// 0 0s
	// 1 250ms
	// 2 500ms
	// 3 750ms
}

func ExampleNewStepPacer() {
	// 2 req/s, then 10 req/s from 1 s on.
	p, _ := NewStepPacer(2, []Step{{At: time.Second, Rate: 10}}, 1500*time.Millisecond)
	for n := uint64(0); ; n++ {
		at, ok := p.At(n)
		if !ok {
			break
		}
		fmt.Print(at, " ")
	}
	fmt.Println()
	// Output:
	// 0s 500ms 1s 1.1s 1.2s 1.3s 1.4s
}
