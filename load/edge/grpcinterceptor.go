package edge

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
)

// UnaryClientInterceptor returns an interceptor that runs every unary call
// of a grpc-go client through ec's call policy — the state machine the
// simulator drives — instead of grpc-go's retry. Each attempt is one call
// of the invoker with the call's outgoing metadata plus x-stormsim-attempt,
// bounded by the policy's attempt timeout. The call's context deadline is
// the policy's deadline and, with propagateDeadline, each attempt's
// grpc-timeout is what is left of it; without, attempts send none. A call
// whose metadata carries x-stormsim-write is a write (never hedged unless
// the edge forces it). Dial with grpc.WithDisableRetry so that grpc-go's
// retry does not stack beneath it.
//
// The call returns nil when the policy's call succeeded, else the last
// attempt's status, or DEADLINE_EXCEEDED or UNAVAILABLE when the policy
// gave up without one (its deadline, breaker or budget). With a
// proto.Message reply every attempt decodes into a fresh message and the
// first success is copied into reply, so hedged attempts never share one;
// other reply types are decoded into directly, and must not be hedged.
func (ec *EdgeClient) UnaryClientInterceptor(propagateDeadline bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		outgoing, _ := metadata.FromOutgoingContext(ctx)
		co := policies.CallOptions{Write: len(outgoing.Get(transport.MetadataWrite)) > 0, Counted: true}
		var a transport.Attempt
		if dl, ok := ctx.Deadline(); ok {
			co.Deadline, co.HasDeadline = ec.clk.Now()+time.Until(dl), true
			if propagateDeadline {
				a.Remaining = time.Until(dl) // marks "propagate"; Do fills the real value
			}
		}
		ic := &intercepted{reply: reply}
		a.Via = invoked(func(actx context.Context, at *transport.Attempt, o transport.Sending) transport.Answer {
			r := ic.target()
			return transport.SendInvoked(actx, at, outgoing.Copy(), o, func(cctx context.Context, trailer *metadata.MD) error {
				err := invoker(cctx, method, req, r, cc, append(opts, grpc.Trailer(trailer))...)
				ic.done(r, err)
				return err
			})
		})
		res := ec.Do(ctx, co, &a, nil)
		return ic.result(res.Outcome)
	}
}

// GRPCDialOptions are the options to dial the channel that
// UnaryClientInterceptor runs on with, for its attempts to be traced by
// phase into ec's Phases as the driver's are, and the edge's phase
// timeouts enforced: a dialer bounding connect_timeout and tls_timeout
// (the HTTP/2 handshake) and a stats handler. Each call returns options
// for one channel. Without them the interceptor's attempts are not
// traced, and no phase timeout applies.
func (ec *EdgeClient) GRPCDialOptions() []grpc.DialOption {
	return transport.GRPCDialOptions(ec.edge.Phases)
}

// invoked adapts the sending of an intercepted call's attempts to a
// transport.Transport (Attempt.Via).
type invoked func(ctx context.Context, a *transport.Attempt, o transport.Sending) transport.Answer

// Send calls f.
func (f invoked) Send(ctx context.Context, a *transport.Attempt, o transport.Sending) transport.Answer {
	return f(ctx, a, o)
}

// intercepted is one intercepted call's state shared by its attempts.
type intercepted struct {
	reply   any
	mu      sync.Mutex
	won     bool
	lastErr error
}

// target is the message an attempt decodes into: a fresh one of reply's
// type, or reply itself when it is not a proto.Message.
func (ic *intercepted) target() any {
	if m, ok := ic.reply.(proto.Message); ok {
		return m.ProtoReflect().New().Interface()
	}
	return ic.reply
}

// done records an attempt's result; the first success is the reply.
func (ic *intercepted) done(r any, err error) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if err != nil {
		if !ic.won {
			ic.lastErr = err
		}
		return
	}
	if !ic.won && r != ic.reply {
		if m, ok := ic.reply.(proto.Message); ok {
			proto.Reset(m)
			proto.Merge(m, r.(proto.Message))
		}
	}
	ic.won = true
}

// result is what the intercepted call returns for the policy's outcome.
func (ic *intercepted) result(o policies.Outcome) error {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	switch {
	case o == policies.OK && ic.won:
		return nil
	case o == policies.Timeout:
		if ic.lastErr != nil && status.Code(ic.lastErr) == codes.DeadlineExceeded {
			return ic.lastErr
		}
		return status.Error(codes.DeadlineExceeded, "stormsim: the call's policy timed out")
	case ic.lastErr != nil:
		return ic.lastErr
	}
	return status.Errorf(codes.Unavailable, "stormsim: the call's policy gave up (%v)", o)
}
