package driver

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/textproto"

	"github.com/stormsim/stormsim/load/transport"
	"golang.org/x/net/http/httpguts"
)

// Defaults of RequestTemplate.
const (
	DefaultTenantHeader = "X-Tenant"
)

// RequestTemplate shapes what the logical requests of a --target run send
// beyond Options' Method and Header: Options.Body made per intent, an
// idempotency key per intent, a tenant. Everything in it is decided once
// per logical request, so every attempt of one intent (its retries, its
// hedges) sends the same bytes, and two intents never share a key.
//
// With a template, keys no longer depend on Options' write draws: every
// logical request carries one unless NoKey.
//
// Options.Body's placeholders are replaced per intent: {n} by the intent's
// number (its request id, 1-based), {key} by its idempotency key ("" with
// NoKey), {tenant} by Tenant. Any other text, braces included, is sent as
// written; a body without placeholders is shared by every request.
type RequestTemplate struct {
	// KeyHeader names the header carrying the key (default
	// Idempotency-Key).
	KeyHeader string
	// KeyPrefix starts every key, which is KeyPrefix followed by the
	// intent's number. Empty: a random prefix per run, so that a second run
	// against a service that remembers keys is not answered from the
	// first run's records.
	KeyPrefix string
	// NoKey sends no idempotency key at all, not even on writes.
	NoKey bool
	// Tenant, if set, is sent in TenantHeader (default X-Tenant) with every
	// attempt.
	Tenant       string
	TenantHeader string
}

// template is a RequestTemplate checked and ready to expand.
type template struct {
	keyHeader string // canonical; "" with NoKey
	keyPrefix string
	tenant    string
	body      []byte
	parts     []bodyPart // nil: body has no placeholder and is shared as is
}

// bodyPart is a literal run of the body, or one placeholder.
type bodyPart struct {
	lit []byte
	ph  placeholder
}

type placeholder int

const (
	phNone placeholder = iota
	phN
	phKey
	phTenant
)

var placeholders = []struct {
	text string
	ph   placeholder
}{{"{n}", phN}, {"{key}", phKey}, {"{tenant}", phTenant}}

// compile checks t and returns its ready form for body.
func (t *RequestTemplate) compile(body []byte) (*template, error) {
	c := &template{tenant: t.Tenant, keyPrefix: t.KeyPrefix}
	if !t.NoKey {
		name := t.KeyHeader
		if name == "" {
			name = transport.HeaderIdempotencyKey
		}
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, fmt.Errorf("load: key header %q: not a valid header name", name)
		}
		c.keyHeader = textproto.CanonicalMIMEHeaderKey(name)
		if c.keyPrefix == "" {
			var b [6]byte
			rand.Read(b[:])
			c.keyPrefix = hex.EncodeToString(b[:]) + "-"
		}
		if !httpguts.ValidHeaderFieldValue(c.keyPrefix) {
			return nil, fmt.Errorf("load: key prefix %q: not a valid header value", c.keyPrefix)
		}
	}
	if t.Tenant != "" {
		if t.TenantHeader != "" && !httpguts.ValidHeaderFieldName(t.TenantHeader) {
			return nil, fmt.Errorf("load: tenant header %q: not a valid header name", t.TenantHeader)
		}
		if !httpguts.ValidHeaderFieldValue(t.Tenant) {
			return nil, fmt.Errorf("load: tenant %q: not a valid header value", t.Tenant)
		}
	}
	c.body = body
	c.parts = splitPlaceholders(body)
	return c, nil
}

// tenantHeader is the canonical name of the tenant's header.
func (t *RequestTemplate) tenantHeader() string {
	if t.TenantHeader == "" {
		return DefaultTenantHeader
	}
	return textproto.CanonicalMIMEHeaderKey(t.TenantHeader)
}

// splitPlaceholders cuts body into literal runs and placeholders; nil when
// it holds none.
func splitPlaceholders(body []byte) []bodyPart {
	var parts []bodyPart
	found := false
	for len(body) > 0 {
		i := bytes.IndexByte(body, '{')
		if i < 0 {
			break
		}
		matched := false
		for _, p := range placeholders {
			if bytes.HasPrefix(body[i:], []byte(p.text)) {
				if i > 0 {
					parts = append(parts, bodyPart{lit: body[:i]})
				}
				parts = append(parts, bodyPart{ph: p.ph})
				body, matched, found = body[i+len(p.text):], true, true
				break
			}
		}
		if !matched {
			parts = append(parts, bodyPart{lit: body[:i+1]})
			body = body[i+1:]
		}
	}
	if !found {
		return nil
	}
	if len(body) > 0 {
		parts = append(parts, bodyPart{lit: body})
	}
	return parts
}

// key returns the idempotency key of the intent with request id id, "" when
// none is sent.
func (c *template) key(id string) string {
	if c.keyHeader == "" {
		return ""
	}
	return c.keyPrefix + id
}

// expand returns the body of the intent with request id id and key key.
func (c *template) expand(id, key string) []byte {
	if c.parts == nil {
		return c.body
	}
	n := 0
	for _, p := range c.parts {
		n += len(p.lit)
	}
	b := make([]byte, 0, n+len(id)+len(key)+len(c.tenant))
	for _, p := range c.parts {
		switch p.ph {
		case phN:
			b = append(b, id...)
		case phKey:
			b = append(b, key...)
		case phTenant:
			b = append(b, c.tenant...)
		default:
			b = append(b, p.lit...)
		}
	}
	return b
}

// apply makes a, the template of one intent's attempts, carry the intent's
// key and body.
func (c *template) apply(a *transport.Attempt, id string) {
	a.IdempotencyKey = c.key(id)
	a.KeyHeader = c.keyHeader
	a.Body = c.expand(id, a.IdempotencyKey)
}

// Validate reports the first field that cannot be sent: a header name that
// is not a token, or a value holding a line break.
func (t *RequestTemplate) Validate() error {
	_, err := t.compile(nil)
	return err
}
