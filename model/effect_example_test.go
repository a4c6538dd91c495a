package model_test

import (
	"fmt"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// An e-mail provider delivers a retried notification twice; a channel that
// deduplicates by the intent's key absorbs the repeat.
func ExampleChannel() {
	for _, dedupe := range []string{topology.DedupeNone, topology.DedupeKey} {
		ch := model.NewChannel(&topology.ExternalEffect{Dedupe: dedupe})
		var n metrics.Effects
		ch.Execute(false).Count(&n) // the first attempt, whose reply was lost
		ch.Execute(true).Count(&n)  // the retry
		fmt.Printf("dedupe %s: %+v\n", dedupe, n)
	}
	// Output:
	// dedupe none: {Sent:2 Delivered:2 Duplicates:1 Absorbed:0}
	// dedupe key: {Sent:2 Delivered:1 Duplicates:0 Absorbed:1}
}

// Two writers read one entity; the first commits. Retrying only the
// second's write loses the first's update; redoing its read-modify-write
// does not.
func ExampleVersions() {
	for _, retry := range []string{topology.RetryStep, topology.RetryOperation} {
		vs := model.NewVersions(&topology.VersionedWrite{Entities: 1, Retry: retry, Attempts: 3}, 1, "accounts")
		first, second := vs.Read(0), vs.Read(0)
		fmt.Print(retry, ": ", vs.Write(0, first, 1), ", ", vs.Write(0, second, 1))
		if retry == topology.RetryOperation {
			fmt.Print(", then ", vs.Write(0, vs.Read(0), 2))
		}
		fmt.Println()
	}
	fmt.Printf("conflict probability at 500/s, 20ms, 50 entities: %.3f\n", model.ConflictProbability(500, 20*time.Millisecond, 50))
	// Output:
	// step: committed, lost_update
	// operation: committed, redo, then committed
	// conflict probability at 500/s, 20ms, 50 entities: 0.181
}
