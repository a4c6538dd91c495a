package serve_test

import (
	"fmt"

	"github.com/stormsim/stormsim/load/serve"
	"github.com/stormsim/stormsim/model"
)

// A status query (a GET with serve.HeaderQuery and the key in
// Idempotency-Key) succeeds whatever the record says: its 2xx status names
// the record's state, which a client reads back with RecordOf.
func ExampleStatusRecord() {
	for _, st := range []model.RecordState{model.NotFound, model.Processing, model.Succeeded} {
		status := serve.StatusRecord(st)
		back, ok := serve.RecordOf(status)
		fmt.Println(status, back, ok)
	}
	_, ok := serve.RecordOf(200) // an ordinary answer names no record
	fmt.Println(ok)
	// Output:
	// 270 NOT_FOUND true
	// 271 PROCESSING true
	// 272 SUCCEEDED true
	// false
}

// A fact query (serve.HeaderFact) asks the downstream whether an effect
// happened; any answer that is not a fact proves nothing.
func ExampleFactOf() {
	fmt.Println(serve.FactOf(serve.StatusFact(model.FactFound)), serve.FactOf(serve.StatusFact(model.FactAbsent)), serve.FactOf(503))
	// Output: found absent unknown
}
