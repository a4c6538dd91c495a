package policies_test

import (
	"fmt"
	"slices"

	"github.com/stormsim/stormsim/policies"
)

// Resolve expands a preset once. A Go caller's non-zero fields win; the
// scenario loader passes the keys the file wrote, so a zero written there
// wins too.
func ExampleBudgetConfig_Resolve() {
	fromGo, _ := policies.BudgetConfig{Preset: "finagle", Ratio: 0.5}.Resolve(nil)
	fmt.Println(fromGo.Kind, fromGo.Ratio, fromGo.MinPerSec, fromGo.Window)

	written := func(key string) bool { return slices.Contains([]string{"preset", "min_per_sec"}, key) }
	fromFile, _ := policies.BudgetConfig{Preset: "finagle"}.Resolve(written)
	fmt.Println(fromFile.Kind, fromFile.Ratio, fromFile.MinPerSec, fromFile.Window)
	// Output:
	// ratio 0.5 10 10s
	// ratio 0.2 0 10s
}

// HAProxy's option redispatch: with retries 3 (4 attempts) the default
// interval −1 redispatches the last retry only; 1 redispatches each.
func ExampleRetryConfig_RedispatchAt() {
	for _, every := range []int{-1, 1} {
		c := policies.RetryConfig{Preset: "haproxy", Redispatch: every}
		c, _ = c.Resolve(nil)
		fmt.Println(every, c.RedispatchAt(1), c.RedispatchAt(2), c.RedispatchAt(3))
	}
	// Output:
	// -1 false false true
	// 1 true true true
}
