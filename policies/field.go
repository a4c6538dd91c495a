package policies

import (
	"errors"
	"fmt"
)

// FieldError is a problem with one field of a policy config. Field is the
// field's path in scenario key names, relative to whatever holds the config:
// a call edge for "retry.backoff.max" or "budget.ratio", a service for
// "overload.codel.target". The scenario loader joins it to the path of the
// holder and points at that key's line, so policies never format positions
// and the loader never parses messages.
type FieldError struct {
	Field string
	Err   error
}

// Error returns "field: message", the form NewEdge's callers print.
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the bare problem, without the field.
func (e *FieldError) Unwrap() error { return e.Err }

// fieldErrorf returns a *FieldError for field with a formatted message.
func fieldErrorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// inField places err under prefix: a *FieldError's field gains the prefix
// ("backoff.max" in "retry" becomes "retry.backoff.max"); any other error
// becomes a problem of prefix itself. A nil err stays nil.
func inField(prefix string, err error) error {
	if err == nil {
		return nil
	}
	if fe, ok := errors.AsType[*FieldError](err); ok {
		return &FieldError{Field: prefix + "." + fe.Field, Err: fe.Err}
	}
	return &FieldError{Field: prefix, Err: err}
}
