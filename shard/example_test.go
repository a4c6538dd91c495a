package shard_test

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/shard"
)

func ExampleParse() {
	s, err := shard.Parse("2/8")
	if err != nil {
		panic(err)
	}
	for _, unit := range []int{0, 2, 9, 10, 18} {
		fmt.Println(unit, s.Owns(unit))
	}
	fmt.Println(s.Size(20), "of 20 units")
	// Output:
	// 0 false
	// 2 true
	// 9 false
	// 10 true
	// 18 true
	// 3 of 20 units
}

func ExampleSpec_Requests() {
	// A global schedule of 7 requests, 100 ms apart, split over 3 shards:
	// each keeps every third request, with its global index as id.
	sched := func(n uint64) (time.Duration, bool) {
		return time.Duration(n) * 100 * time.Millisecond, n < 7
	}
	for i := range 3 {
		s := shard.Spec{Index: i, Count: 3}
		fmt.Print(s, ":")
		for r := range s.Requests(sched) {
			fmt.Printf(" #%d@%v", r.ID, r.At)
		}
		fmt.Println()
	}
	// Output:
	// 0/3: #0@0s #3@300ms #6@600ms
	// 1/3: #1@100ms #4@400ms
	// 2/3: #2@200ms #5@500ms
}

func ExampleStartAt_Delay() {
	start, _ := shard.ParseStartAt("2026-12-01T10:00:00Z")
	podReady := time.Date(2026, 12, 1, 9, 59, 48, 0, time.UTC)
	d, _ := start.Delay(podReady, shard.DefaultMaxLate)
	fmt.Println("wait", d)
	_, err := start.Delay(podReady.Add(time.Minute), shard.DefaultMaxLate)
	fmt.Println(err != nil)
	// Output:
	// wait 12s
	// true
}

// ExampleFlags shows how a command adopts the sharding flags; in a pod of
// an Indexed Job, --shard-from-env reads the shard from the environment
// (here a stand-in for os.LookupEnv).
func ExampleFlags() {
	var f shard.Flags
	fs := pflag.NewFlagSet("sweep", pflag.ContinueOnError)
	f.Register(fs)
	f.RegisterStartAt(fs) // load only
	if err := fs.Parse([]string{"--shard-from-env", "--start-at", "2026-12-01T10:00:00Z"}); err != nil {
		panic(err)
	}
	pod := map[string]string{shard.IndexEnv: "5", shard.CountEnv: "8"}
	s, err := f.Spec(func(k string) (string, bool) { v, ok := pod[k]; return v, ok })
	if err != nil {
		panic(err)
	}
	fmt.Println(s, f.StartAt, shard.Dir("/results/run", s.Index))
	// Output: 5/8 2026-12-01T10:00:00Z /results/run/shard-5
}

func ExampleRun() {
	r, err := shard.ParseRun("nightly-42")
	if err != nil {
		panic(err)
	}
	id := r.ID("1a2b3c4d5e6f7a8b") // the digest of the shard's command line
	fmt.Println(id, shard.RunOf(id))
	fmt.Printf("%q\n", shard.RunOf("1a2b3c4d5e6f7a8b"))
	_, err = shard.ParseRun("a.b")
	fmt.Println(err)
	// Output:
	// nightly-42.1a2b3c4d5e6f7a8b nightly-42
	// ""
	// run label "a.b": only letters, digits, _ and - are allowed, not '.'
}
