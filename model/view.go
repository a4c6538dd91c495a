package model

import (
	"github.com/stormsim/stormsim/idempotency"
	"github.com/stormsim/stormsim/policies"
)

// View is how a caller's result reads in the side-effect ledger
// (idempotency.Ledger): a call still pending when the run ends is unknown
// to its caller, like one that timed out.
func View(r policies.CallResult) idempotency.CallerView {
	switch r {
	case policies.Succeeded:
		return idempotency.Succeeded
	case policies.Failed:
		return idempotency.Failed
	}
	return idempotency.Unknown
}
