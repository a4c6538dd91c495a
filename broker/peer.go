package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// Bounds on what a NATS server can make the client hold. nats.go sizes a
// message's buffer from the size its MSG line claims, so a hostile server
// could have it allocate any amount; the connection is read through a
// peerConn that checks every line first.
const (
	// MaxPeerPayload is the largest message accepted from a server, even
	// one whose INFO allows more (NATS's own ceiling is 64 MiB).
	MaxPeerPayload = 64 << 20
	// MaxPeerLine is the longest protocol line accepted (an INFO with
	// many connect_urls is the longest a real server sends).
	MaxPeerLine = 1 << 20
)

// Redact returns urls (nats.go's comma-separated list) with the userinfo
// of each (a user and password, or a token) replaced by "***", for
// messages: credentials given on a command line are never printed.
func Redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, s := range parts {
		if at := strings.LastIndexByte(s, '@'); at >= 0 {
			start := 0
			if j := strings.Index(s, "://"); j >= 0 && j < at {
				start = j + 3
			}
			parts[i] = s[:start] + "***" + s[at:]
		}
	}
	return strings.Join(parts, ",")
}

// peerGuard dials the servers of one Connect, and no others (never the
// servers a server advertises), and keeps the first breach of a bound by
// any of its connections: it ends the client connection, and every later
// error of it is reported with it.
type peerGuard struct {
	allowed map[string]bool // host:port of the URLs given

	mu  sync.Mutex
	err error
	nc  *nats.Conn
}

// newPeerGuard allows the servers of urls (nats.go's comma-separated list).
func newPeerGuard(urls string) *peerGuard {
	g := &peerGuard{allowed: map[string]bool{}}
	for _, s := range strings.Split(urls, ",") {
		s = strings.TrimSpace(s)
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if err != nil {
			continue // nats.Connect reports it
		}
		host, port := u.Hostname(), u.Port()
		if port == "" {
			port = strconv.Itoa(nats.DefaultPort)
		}
		g.allowed[net.JoinHostPort(host, port)] = true
	}
	return g
}

// Dial is nats.CustomDialer's: it dials address only if it is one of the
// URLs given, and only while no connection breached a bound.
func (g *peerGuard) Dial(network, address string) (net.Conn, error) {
	if err := g.failed(); err != nil {
		return nil, err
	}
	if !g.allowed[address] {
		return nil, fmt.Errorf("broker: not dialing %s: only the NATS servers given are dialed, not those a server advertises", address)
	}
	c, err := (&net.Dialer{Timeout: nats.DefaultTimeout}).Dial(network, address)
	if err != nil {
		return nil, err
	}
	return &peerConn{Conn: c, g: g, addr: address, limit: MaxPeerPayload}, nil
}

// failed returns the breach seen, if any.
func (g *peerGuard) failed() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// fail records err as the breach and closes the client connection.
func (g *peerGuard) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return
	}
	g.err = err
	if nc := g.nc; nc != nil {
		go nc.Close() // not from inside nats.go's read loop
	}
}

// attach gives the guard the client connection it ends on a breach.
func (g *peerGuard) attach(nc *nats.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nc = nc
	if g.err != nil {
		go nc.Close()
	}
}

// explain returns err with the breach that caused it, if any.
func (g *peerGuard) explain(err error) error {
	if err == nil {
		return nil
	}
	if b := g.failed(); b != nil {
		return fmt.Errorf("%w (%v)", b, err)
	}
	return err
}

// peerConn is a connection to a NATS server whose every protocol line is
// checked before nats.go reads it: lines at most MaxPeerLine long,
// messages at most the server's max_payload (and MaxPeerPayload), no TLS
// (which would hide the lines from the check). A read that completes a
// line breaching a bound returns the breach instead of the bytes, so
// nats.go never acts on it.
type peerConn struct {
	net.Conn
	g    *peerGuard
	addr string

	line  []byte // the control line read so far
	skip  int64  // bytes of a message (and its CRLF) still to pass
	limit int64  // the largest message accepted
}

func (c *peerConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if berr := c.scan(p[:n]); berr != nil {
			c.g.fail(berr)
			c.Conn.Close()
			return 0, berr
		}
	}
	return n, err
}

// scan follows the protocol through b.
func (c *peerConn) scan(b []byte) error {
	for len(b) > 0 {
		if c.skip > 0 {
			k := int64(len(b))
			if k > c.skip {
				k = c.skip
			}
			c.skip -= k
			b = b[k:]
			continue
		}
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if len(c.line)+len(part) > MaxPeerLine {
			return fmt.Errorf("broker: NATS server %s: a protocol line longer than %d bytes", c.addr, MaxPeerLine)
		}
		c.line = append(c.line, part...)
		if i < 0 {
			return nil
		}
		b = b[i+1:]
		if err := c.control(bytes.TrimSuffix(c.line, []byte("\r"))); err != nil {
			return err
		}
		c.line = c.line[:0]
	}
	return nil
}

// control checks one control line: an INFO sets the message limit, a
// MSG or HMSG must announce a message within it.
func (c *peerConn) control(line []byte) error {
	op, args, _ := bytes.Cut(bytes.TrimLeft(line, " \t"), []byte(" "))
	switch {
	case bytes.EqualFold(op, []byte("INFO")):
		var info struct {
			MaxPayload  int64 `json:"max_payload"`
			TLSRequired bool  `json:"tls_required"`
		}
		if err := json.Unmarshal(args, &info); err != nil {
			return fmt.Errorf("broker: NATS server %s: its INFO is not JSON", c.addr)
		}
		if info.TLSRequired {
			return fmt.Errorf("broker: NATS server %s requires TLS, which stormsim's NATS client does not speak", c.addr)
		}
		c.limit = MaxPeerPayload
		if info.MaxPayload > 0 && info.MaxPayload < c.limit {
			c.limit = info.MaxPayload
		}
	case bytes.EqualFold(op, []byte("MSG")), bytes.EqualFold(op, []byte("HMSG")):
		f := bytes.Fields(args)
		if len(f) < 3 {
			return fmt.Errorf("broker: NATS server %s: a malformed %s line", c.addr, strings.ToUpper(string(op)))
		}
		size, err := strconv.ParseInt(string(f[len(f)-1]), 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("broker: NATS server %s: a malformed %s line", c.addr, strings.ToUpper(string(op)))
		}
		if size > c.limit {
			return fmt.Errorf("broker: NATS server %s: a message of %d bytes, over the %d accepted (its max_payload, at most %d)", c.addr, size, c.limit, int64(MaxPeerPayload))
		}
		c.skip = size + 2 // the payload and its CRLF
	}
	return nil
}
