package tune_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/stormsim/stormsim/tune"
)

func ExampleReadSamples() {
	in := "ts,latency_ms\n1,4.5\n2,7\n3,12ms\n"
	d, err := tune.ReadSamples(strings.NewReader(in), "lat.csv", "latency_ms", time.Millisecond)
	fmt.Println(d, err)
	_, err = tune.ReadSamples(strings.NewReader("4\nfast\n"), "lat.txt", "", time.Millisecond)
	fmt.Println(err)
	// Output:
	// [4.5ms 7ms 12ms] <nil>
	// lat.txt:2: bad number "fast"
}

func ExampleSamples_HedgedQuantile() {
	// 97 fast answers (1–97ms) and 3 stragglers (1s, 2s, 3s).
	var d []time.Duration
	for i := 1; i <= 97; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	d = append(d, time.Second, 2*time.Second, 3*time.Second)
	s, _ := tune.NewSamples(d)
	delay := s.Quantile(0.9)
	fmt.Println("p99:", s.Quantile(0.99))
	fmt.Println("hedge after", delay, "extra load", s.Above(delay))
	fmt.Println("hedged p99:", s.HedgedQuantile(0.99, delay))
	// Output:
	// p99: 2s
	// hedge after 90ms extra load 0.1
	// hedged p99: 157ms
}

func ExampleRecommend() {
	// Two hops with uniform latency: the api (1–100ms, its own work plus
	// the db) and the db (1–50ms).
	var api, db []time.Duration
	for i := 1; i <= 1000; i++ {
		api = append(api, time.Duration(i)*100*time.Microsecond)
		db = append(db, time.Duration(i)*50*time.Microsecond)
	}
	a, _ := tune.NewSamples(api)
	b, _ := tune.NewSamples(db)
	p, err := tune.Recommend([]tune.Hop{{Name: "api", Samples: a}, {Name: "db", Samples: b}},
		tune.Options{Deadline: 300 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range p.Hops {
		fmt.Printf("%s: timeout %v, budget %v, %d attempt(s), spurious %.1f%%\n", h.Name, h.Timeout, h.Budget, h.Attempts, 100*h.Spurious)
	}
	fmt.Printf("budget ratio %.2f\n", p.BudgetRatio)
	// Output:
	// api: timeout 199.35ms, budget 300ms, 1 attempt(s), spurious 0.0%
	// db: timeout 49.95ms, budget 250.5ms, 3 attempt(s), spurious 0.1%
	// budget ratio 0.20
}

func ExampleDeadlineError() {
	s, _ := tune.NewSamples([]time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 400 * time.Millisecond})
	_, err := tune.Recommend([]tune.Hop{{Name: "search", Samples: s}}, tune.Options{Deadline: 100 * time.Millisecond})
	fmt.Println(err)
	// Output:
	// hop "search": deadline too short: its budget 100ms cannot hold one attempt with timeout 400ms (p99.9); only 66.67% of its samples finish within the budget
}
