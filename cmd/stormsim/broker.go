package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/broker"
)

func init() {
	register(&command{
		name:    "broker",
		summary: "run a scenario's topic through a real NATS JetStream (embedded on loopback, or --nats) and print its consumer summary",
		usage:   "SCENARIO [--topic T] [--intents N] [--nats URL] [--timeout D] [flags]",
		example: `  stormsim broker outbox-order --set services.0.calls.0.publish.via=outbox --intents 200
  stormsim broker outbox-order --nats nats://127.0.0.1:4222`,
		new: func() subcommand { return new(brokerCommand) },
	})
}

// brokerCommand is `stormsim broker`: one topic's asynchronous hop, for real.
type brokerCommand struct {
	sf      scenarioFlags
	topic   string
	intents int
	nats    natsFlag
	remote  bool
	timeout time.Duration
}

func (c *brokerCommand) flags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&c.sf.sets, "set", nil, "override a scenario value: `path=value` (repeatable)")
	fs.Uint64Var(&c.sf.seed, "seed", 0, "random seed of the crash draws (default: the scenario's)")
	fs.StringVar(&c.topic, "topic", "", "the topic (default: the scenario's only one)")
	fs.IntVar(&c.intents, "intents", 100, "logical intents (commits) to publish, 1 to 100000")
	c.nats.declare(fs)
	// --nats-url was this command's name of --nats before serve and load had one.
	fs.StringVar(&c.nats.url, "nats-url", "", "the former name of --nats")
	_ = fs.MarkDeprecated("nats-url", "use --nats")
	fs.BoolVar(&c.remote, "allow-remote", false, "allow a --nats server off the loopback interface")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "give up when the messages are not all acked or dead-lettered by then")
}

func (c *brokerCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one scenario, got %d arguments", len(args))}
	}
	if c.intents < 1 || c.intents > 100000 {
		return &exitError{exitUsage, fmt.Errorf("--intents: want 1 to 100000, got %d", c.intents)}
	}
	if c.timeout <= 0 {
		return &exitError{exitUsage, errors.New("--timeout: want > 0")}
	}
	sc, err := loadScenario(args[0], c.sf.overrides())
	if err != nil {
		return err
	}
	if err := c.nats.check(c.remote); err != nil {
		return err
	}
	topic := c.topic
	if topic == "" {
		for _, s := range sc.Services {
			if s.Consumes == nil {
				continue
			}
			if topic != "" {
				return &exitError{exitUsage, errors.New("the scenario has several topics: name one with --topic")}
			}
			topic = s.Consumes.Topic
		}
		if topic == "" {
			return &exitError{exitUsage, errors.New("the scenario has no topic (no service consumes one)")}
		}
	}
	url := c.nats.url
	if url == "" {
		srv, err := broker.Embedded()
		if err != nil {
			return err
		}
		defer srv.Close()
		url = srv.URL()
	}
	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	sum, err := broker.Walk(wctx, url, sc, topic, c.intents, sc.Seed)
	if err != nil {
		if ctx.Err() != nil { // a signal, not --timeout
			return fmt.Errorf("%w: nothing written (%v)", errInterrupted, context.Cause(ctx))
		}
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sum)
}
