package policies

// Validate reports a field that cannot describe a retry policy, after
// resolving its preset and defaults. Fields are named relative to the call
// edge ("retry.on", "retry.backoff.max").
func (c RetryConfig) Validate() error {
	return inField("retry", c.validate())
}

// validate is Validate with fields relative to the retry block.
func (c RetryConfig) validate() error {
	c, err := c.Resolve(nil)
	if err != nil {
		return err
	}
	if c.MaxAttempts < 1 {
		return fieldErrorf("max_attempts", "must be ≥ 1 (1 means no retry), got %d", c.MaxAttempts)
	}
	if _, err := ParseOutcomeSet(c.On, DefaultRetryOn); err != nil {
		return &FieldError{Field: "on", Err: err}
	}
	for _, n := range c.On {
		if o, _ := ParseOutcome(n); o == OK || o == Conflict || o == BreakerOpen || o == Throttled {
			return fieldErrorf("on", "%q cannot be retried (want unavailable, timeout, error, in_progress or not_sent)", n)
		}
	}
	if c.Backoff.Multiplier == 0 { // written as 0: NewBackoff would default it
		return fieldErrorf("backoff.multiplier", "must be ≥ 1, got 0")
	}
	if _, err := NewBackoff(c.Backoff); err != nil {
		return err
	}
	return nil
}

// Validate reports a field that cannot describe a backoff; fields are
// named relative to the retry block ("backoff.max").
func (c BackoffConfig) Validate() error {
	_, err := NewBackoff(c)
	return err
}
