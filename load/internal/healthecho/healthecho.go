// Package healthecho is the gRPC load benchmark's lean target: an HTTP/2
// server (prior knowledge, no TLS) that answers the unary call
// grpc.health.v1.Health/Check as grpc-go's health server does for a server
// whose every service is SERVING under the name "".
//
// The benchmark measures the load generator, and the generator and its
// target share the machine's two cores. grpc-go's server spent 27–36 µs of
// CPU per call on the development machine, more than stormsim's driver
// (about 20 µs) and so the larger share of what bounds the rate. This
// server reads and answers every frame of a connection on one goroutine,
// with no goroutine, timer or allocation per call: each answer's three
// frames are fixed bytes written into a buffer, flushed when the next frame
// has not fully arrived, so the answers to the calls one read brings leave
// in one write.
//
// What it answers is what grpc-go's server (with health.NewServer and
// reflection registered) answers, as a client sees it (TestAnswersAsGRPCGo):
// SERVING for Check of "", NOT_FOUND "unknown service" for any other name,
// UNIMPLEMENTED for other methods and services, with grpc-go's messages;
// INTERNAL for a request that is not one well-formed message, and
// RESOURCE_EXHAUSTED past grpc-go's 4 MiB receive limit. It does not serve
// reflection (ghz is given the health service's descriptors with
// --protoset: DescriptorSet), Watch or List, compression, or answers to a
// client that stops reading while it still sends.
package healthecho

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/stormsim/stormsim/load/internal/connserve"
)

// Path is the one method served.
const Path = "/grpc.health.v1.Health/Check"

// MaxRecvMsgSize is grpc-go's default limit on a received message.
const MaxRecvMsgSize = 4 << 20

// gRPC status codes used here (google.golang.org/grpc/codes).
const (
	codeInternal          = 13
	codeInvalidArgument   = 3
	codeNotFound          = 5
	codeUnimplemented     = 12
	codeResourceExhausted = 8
)

// serving is the SERVING answer's message: its 5-byte prefix (not
// compressed, 2 bytes) and HealthCheckResponse{status: SERVING}.
var serving = []byte{0, 0, 0, 0, 2, 0x08, 0x01}

// Header blocks are encoded without the dynamic table (indexed static
// entries and never-indexed literals), so one encoding serves every
// connection whatever its table holds.
var (
	okHeaders  = block(":status", "200", "content-type", "application/grpc")
	okTrailers = block("grpc-status", "0", "grpc-message", "")
)

// block encodes name/value pairs as a header block that leaves the
// decoder's dynamic table as it was.
func block(kv ...string) []byte {
	var b bytes.Buffer
	e := hpack.NewEncoder(&b)
	for i := 0; i < len(kv); i += 2 {
		// :status 200 is a whole static entry; anything else is written
		// never-indexed, so the encoder adds nothing to its table.
		sensitive := !(kv[i] == ":status" && kv[i+1] == "200")
		e.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1], Sensitive: sensitive})
	}
	return b.Bytes()
}

// DescriptorSet is the health service's file descriptor set, serialized:
// what ghz's --protoset reads in place of server reflection.
func DescriptorSet() ([]byte, error) {
	fd := protodesc.ToFileDescriptorProto(healthpb.File_grpc_health_v1_health_proto)
	return proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fd}})
}

// Server answers the connections of one listener.
type Server struct{ conns connserve.Server }

// ErrClosed is what Serve returns once Close has stopped it.
var ErrClosed = connserve.ErrClosed

// Serve accepts connections on ln and answers them until Close is called
// or ln fails; it returns ErrClosed after Close.
func (s *Server) Serve(ln net.Listener) error { return s.conns.Serve(ln, serveConn) }

// Close stops Serve, closes every open connection and waits for their
// goroutines to end.
func (s *Server) Close() error { return s.conns.Close() }

// conn is one connection's state, all on its serving goroutine.
type conn struct {
	br *bufio.Reader
	bw *bufio.Writer
	fr *http2.Framer
	// streams are the open streams by id; lastID the highest opened.
	streams map[uint32]*stream
	lastID  uint32
	// The client's send windows for this server's DATA, and its setting
	// for new streams; blocked lists streams whose answer waits for them.
	connWin int64
	initWin int64
	blocked []uint32
	// recv counts DATA bytes received and not yet granted back.
	recv uint32
	// free holds answered streams' records for new ones.
	free []*stream
	// early lists streams answered before their request ended (headers),
	// whose answer is written at the next flush.
	early []uint32
}

// flushEarly writes the answers decided before their requests ended,
// resetting each stream after its answer as grpc-go does.
func (c *conn) flushEarly() {
	for _, id := range c.early {
		if st := c.streams[id]; st != nil && st.early {
			st.early = false
			c.answer(id, st, true)
		}
	}
	c.early = c.early[:0]
}

// newStream returns a stream record for a new call, reused if one is free.
func (c *conn) newStream() *stream {
	var st *stream
	if n := len(c.free); n > 0 {
		st = c.free[n-1]
		c.free = c.free[:n-1]
		*st = stream{msg: st.msg[:0]}
	} else {
		st = new(stream)
	}
	st.win, st.ctype = c.initWin, "application/grpc"
	return st
}

// stream is one call's state until its answer is written.
type stream struct {
	ctype  string // the answer's content-type: the request's subtype kept, as grpc-go does
	msg    []byte // the request's bytes so far (prefix and message)
	recv   uint32 // bytes received on the stream not yet granted back
	win    int64
	answer int  // 0 while receiving; else what to send (answerServing, …)
	early  bool // answered at its headers; the answer waits (flushEarly)
	status int
	text   string
}

const (
	answerServing = 1 + iota
	answerStatus  // trailers only: status and text
)

// recvWindow is the initial window both ends start with (RFC 9113
// 6.9.2); a window update returns what was received once half is used.
const recvWindow = 65535

func serveConn(nc net.Conn) {
	c := &conn{br: bufio.NewReaderSize(nc, 32<<10), bw: bufio.NewWriterSize(nc, 32<<10),
		streams: map[uint32]*stream{}, connWin: recvWindow, initWin: recvWindow}
	c.fr = http2.NewFramer(c.bw, c.br)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = 16 << 20 // grpc-go's server default
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c.br, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	if c.fr.WriteSettings() != nil || c.bw.Flush() != nil {
		return
	}
	for {
		if !c.frameBuffered() {
			c.flushEarly()
			if c.bw.Buffered() > 0 && c.bw.Flush() != nil {
				return
			}
		}
		f, err := c.fr.ReadFrame()
		if err != nil {
			if se, ok := err.(http2.StreamError); ok {
				c.fr.WriteRSTStream(se.StreamID, se.Code)
				delete(c.streams, se.StreamID)
				continue
			}
			if ce, ok := err.(http2.ConnectionError); ok {
				c.fr.WriteGoAway(c.lastID, http2.ErrCode(ce), nil)
				c.bw.Flush()
			}
			return
		}
		if !c.frame(f) {
			c.bw.Flush()
			return
		}
	}
}

// frameBuffered reports whether the next frame has arrived whole, so that
// reading it will not wait on the connection: the answers written so far
// are flushed only when it has not.
func (c *conn) frameBuffered() bool {
	n := c.br.Buffered()
	if n < 9 {
		return false
	}
	h, _ := c.br.Peek(3)
	return n >= 9+int(h[0])<<16|int(h[1])<<8|int(h[2])
}

// frame handles one frame; false ends the connection.
func (c *conn) frame(f http2.Frame) bool {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return c.headers(f)
	case *http2.DataFrame:
		return c.data(f)
	case *http2.SettingsFrame:
		if f.IsAck() {
			return true
		}
		err := f.ForeachSetting(func(s http2.Setting) error {
			if s.ID == http2.SettingInitialWindowSize {
				d := int64(s.Val) - c.initWin
				c.initWin = int64(s.Val)
				for _, st := range c.streams {
					st.win += d
				}
			}
			return nil
		})
		if err != nil || c.fr.WriteSettingsAck() != nil {
			return false
		}
		c.unblock()
	case *http2.PingFrame:
		if !f.IsAck() {
			return c.fr.WritePing(true, f.Data) == nil
		}
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			c.connWin += int64(f.Increment)
		} else if st := c.streams[f.StreamID]; st != nil {
			st.win += int64(f.Increment)
		}
		c.unblock()
	case *http2.RSTStreamFrame:
		delete(c.streams, f.StreamID)
	case *http2.GoAwayFrame:
		return false
	}
	return true
}

// headers opens a stream (or ends one with trailers) and answers at once
// a call it cannot serve, as grpc-go's server does.
func (c *conn) headers(f *http2.MetaHeadersFrame) bool {
	id := f.StreamID
	if st := c.streams[id]; st != nil {
		// Trailers from the client: they end its half of the stream.
		if !f.StreamEnded() {
			c.fr.WriteGoAway(c.lastID, http2.ErrCodeProtocol, nil)
			return false
		}
		return c.ended(id, st)
	}
	if id%2 == 0 || id <= c.lastID {
		c.fr.WriteGoAway(c.lastID, http2.ErrCodeProtocol, nil)
		return false
	}
	c.lastID = id
	st := c.newStream()
	var path, method string
	ctype, authority := "", false
	for _, h := range f.Fields {
		switch h.Name {
		case ":path":
			path = h.Value
		case ":method":
			method = h.Value
		case ":authority", "host":
			authority = true
		case "content-type":
			ctype = h.Value
		}
	}
	sub, isGRPC := contentSubtype(ctype)
	if sub != "" {
		st.ctype = "application/grpc+" + sub
	}
	// The refusals grpc-go's server makes before a call starts, in its
	// order: an HTTP status with the gRPC status in one block.
	switch {
	case !isGRPC:
		c.earlyAbort(id, st, "415", codeInvalidArgument, fmt.Sprintf("invalid gRPC request content-type %q", ctype), f.StreamEnded())
		return true
	case !authority:
		c.earlyAbort(id, st, "400", codeInternal, "no host or :authority header present", f.StreamEnded())
		return true
	case method != "POST":
		c.earlyAbort(id, st, "405", codeInternal, fmt.Sprintf("Received a HEADERS frame with :method %q which should be POST", method), f.StreamEnded())
		return true
	}
	c.streams[id] = st
	if path != Path {
		// grpc-go answers a method it does not serve from a goroutine of
		// its own while its reader goes on: the request's end, read with
		// its headers, comes first, and a stream still open then is reset
		// after the answer. Here that answer waits for the request's end
		// or, at the latest, for the next flush (flushEarly).
		st.answer, st.status, st.text = answerStatus, codeUnimplemented, unknownPath(path)
		if f.StreamEnded() {
			c.answer(id, st, false)
		} else {
			st.early = true
			c.early = append(c.early, id)
		}
		return true
	}
	if f.StreamEnded() {
		return c.ended(id, st)
	}
	return true
}

// contentSubtype splits a gRPC content-type as grpc-go does: the part
// after "application/grpc+" or "application/grpc;", and whether v is
// gRPC's at all.
func contentSubtype(v string) (string, bool) {
	const base = "application/grpc"
	if v == base {
		return "", true
	}
	if !strings.HasPrefix(v, base) || (v[len(base)] != '+' && v[len(base)] != ';') {
		return "", false
	}
	return v[len(base)+1:], true
}

// unknownPath is grpc-go's message for a call to a method it does not
// serve.
func unknownPath(path string) string {
	if !strings.HasPrefix(path, "/") {
		return fmt.Sprintf("malformed method name: %q", path)
	}
	sm := path[1:]
	i := strings.LastIndex(sm, "/")
	if i == -1 {
		return fmt.Sprintf("malformed method name: %q", path)
	}
	service, method := sm[:i], sm[i+1:]
	if service == "grpc.health.v1.Health" || service == "grpc.reflection.v1.ServerReflection" || service == "grpc.reflection.v1alpha.ServerReflection" {
		return fmt.Sprintf("unknown method %v for service %v", method, service)
	}
	return fmt.Sprintf("unknown service %v", service)
}

// earlyAbort refuses a call before it starts as grpc-go does: an HTTP
// status with the gRPC status in one block ending the stream, then a
// reset if the client's half is still open.
func (c *conn) earlyAbort(id uint32, st *stream, httpStatus string, code int, text string, ended bool) {
	b := block(":status", httpStatus, "content-type", st.ctype, "grpc-status", fmt.Sprint(code), "grpc-message", encodeMessage(text))
	c.free = append(c.free, st)
	c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b, EndHeaders: true, EndStream: true})
	if !ended {
		c.fr.WriteRSTStream(id, http2.ErrCodeNo)
	}
}

// data takes a call's request bytes and grants the window they used back
// once half of it is spent.
func (c *conn) data(f *http2.DataFrame) bool {
	n := f.Length
	c.recv += n
	if c.recv >= recvWindow/2 {
		if c.fr.WriteWindowUpdate(0, c.recv) != nil {
			return false
		}
		c.recv = 0
	}
	st := c.streams[f.StreamID]
	if st != nil && st.early && f.StreamEnded() {
		return c.ended(f.StreamID, st)
	}
	if st == nil || st.answer != 0 {
		return true // a stream answered already, or reset: its bytes are dropped
	}
	st.msg = append(st.msg, f.Data()...)
	// A message declared over the limit is refused as soon as its prefix
	// is in, as grpc-go does, before its bytes are kept.
	if len(st.msg) >= 5 {
		if n := binary.BigEndian.Uint32(st.msg[1:5]); n > MaxRecvMsgSize {
			st.answer, st.status = answerStatus, codeResourceExhausted
			st.text = fmt.Sprintf("grpc: received message larger than max (%d vs. %d)", n, MaxRecvMsgSize)
			st.msg = st.msg[:0]
			c.answer(f.StreamID, st, !f.StreamEnded())
			return true
		}
	}
	if st.recv += n; st.recv >= recvWindow/2 && !f.StreamEnded() {
		if c.fr.WriteWindowUpdate(f.StreamID, st.recv) != nil {
			return false
		}
		st.recv = 0
	}
	if f.StreamEnded() {
		return c.ended(f.StreamID, st)
	}
	return true
}

// ended answers a request whose client half ended: Check's answer for one
// well-formed HealthCheckRequest, else grpc-go's error for what came.
func (c *conn) ended(id uint32, st *stream) bool {
	if st.early {
		st.early = false
		c.answer(id, st, false)
		return true
	}
	st.answer = answerStatus
	st.status, st.text = check(st.msg)
	if st.status == 0 {
		st.answer = answerServing
	}
	c.answer(id, st, false)
	return true
}

// check decodes a unary request's bytes and returns the status Check
// answers it with (0: SERVING).
func check(b []byte) (int, string) {
	if len(b) < 5 {
		if len(b) == 0 {
			return codeInternal, "cardinality violation: received no request message from non-client-streaming RPC"
		}
		return codeInternal, "unexpected EOF"
	}
	if b[0] == 1 {
		return codeInternal, "grpc: compressed flag set with identity or empty encoding"
	}
	if b[0] != 0 {
		return codeInternal, fmt.Sprintf("grpc: received unexpected payload format %d", b[0])
	}
	n := binary.BigEndian.Uint32(b[1:5]) // at most MaxRecvMsgSize (data)
	if int(n) > len(b)-5 {
		return codeInternal, "unexpected EOF"
	}
	if int(n) < len(b)-5 {
		return codeInternal, "cardinality violation: received multiple request messages for non-client-streaming RPC"
	}
	if n == 0 {
		return 0, "" // the common case: service "" with no allocation
	}
	var req healthpb.HealthCheckRequest
	if err := proto.Unmarshal(b[5:], &req); err != nil {
		return codeInternal, "grpc: failed to unmarshal the received message: " + err.Error()
	}
	if req.GetService() != "" {
		return codeNotFound, "unknown service"
	}
	return 0, ""
}

// answer writes st's answer, or holds it until the client's windows allow
// its message; reset resets the stream after it (the client's half still
// open, as grpc-go does for a call it refused early).
func (c *conn) answer(id uint32, st *stream, reset bool) {
	if st.answer == answerServing && (c.connWin < int64(len(serving)) || st.win < int64(len(serving))) {
		c.blocked = append(c.blocked, id)
		return
	}
	c.write(id, st)
	if reset {
		c.fr.WriteRSTStream(id, http2.ErrCodeNo)
	}
}

// write writes st's frames and forgets it.
func (c *conn) write(id uint32, st *stream) {
	delete(c.streams, id)
	c.free = append(c.free, st)
	if st.answer == answerStatus {
		b := block(":status", "200", "content-type", st.ctype, "grpc-status", fmt.Sprint(st.status), "grpc-message", encodeMessage(st.text))
		c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b, EndHeaders: true, EndStream: true})
		return
	}
	h := okHeaders
	if st.ctype != "application/grpc" {
		h = block(":status", "200", "content-type", st.ctype)
	}
	c.connWin -= int64(len(serving))
	c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h, EndHeaders: true})
	c.fr.WriteData(id, false, serving)
	c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: okTrailers, EndHeaders: true, EndStream: true})
}

// unblock writes the held answers the windows now allow, in order.
func (c *conn) unblock() {
	k := 0
	for i, id := range c.blocked {
		st := c.streams[id]
		if st == nil {
			continue // reset meanwhile
		}
		if c.connWin < int64(len(serving)) {
			k += copy(c.blocked[k:], c.blocked[i:])
			break
		}
		if st.win < int64(len(serving)) {
			c.blocked[k] = id
			k++
			continue
		}
		c.write(id, st)
	}
	c.blocked = c.blocked[:k]
}

// encodeMessage percent-encodes a status message as gRPC's grpc-message
// requires.
func encodeMessage(m string) string {
	var b strings.Builder
	for i := 0; i < len(m); i++ {
		ch := m[i]
		if ch >= ' ' && ch <= '~' && ch != '%' {
			b.WriteByte(ch)
		} else {
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}
