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
	switch {
	case c.MaxAttempts < 0 || (c.MaxAttempts == 0 && !c.EachServerOnce):
		return fieldErrorf("max_attempts", "must be ≥ 1 (1 means no retry), got %d", c.MaxAttempts)
	case c.EachServerOnce && c.SameServer:
		return fieldErrorf("same_server", "contradicts each_server_once: a retry goes to the same replica or to an untried one")
	case c.Redispatch != 0 && !c.SameServer:
		return fieldErrorf("redispatch", "needs same_server: it says which same-server retries go elsewhere")
	case c.TurnAround < 0:
		return fieldErrorf("turn_around", "must be ≥ 0, got %v", c.TurnAround)
	case c.RetryWindow < 0:
		return fieldErrorf("retry_window", "must be ≥ 0, got %v", c.RetryWindow)
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
