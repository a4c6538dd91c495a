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
