package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/shard"
	"github.com/stormsim/stormsim/topology"
)

// perProcessFlags differ between the processes of one run (each shard its
// index and directory) or do not change what it computes: the run id
// leaves them out.
var perProcessFlags = map[string]bool{
	"shard": true, "out": true, "progress": true, "workers": true, "shard-wait": true, "format": true,
}

// runIDOf identifies the run a command line asks for: a digest of the
// command, every flag that shapes the result, and the content of every
// argument that names a file (the scenario). The shards of one run, started
// with the same flags but their own --shard and --out, share it; a
// directory left by an earlier run with other flags or another scenario
// does not, and 'stormsim merge' refuses to mix the two. It is a function
// of the command line and the files alone, so output stays deterministic.
// A shard given --run LABEL records LABEL.digest, so that 'merge --run'
// can tell this run's shards from a previous run's of the same command.
func runIDOf(name string, fs *pflag.FlagSet) string {
	h := sha256.New()
	fmt.Fprintf(h, "stormsim %s %s\n", version, name)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed && !perProcessFlags[f.Name] {
			fmt.Fprintf(h, "--%s=%q\n", f.Name, f.Value.String())
		}
	})
	for _, a := range fs.Args() {
		fmt.Fprintf(h, "arg %q\n", a)
		if b, err := inputfile.Read(a, topology.MaxFileSize); err == nil {
			fmt.Fprintf(h, "content %x\n", sha256.Sum256(b))
		}
	}
	id := hex.EncodeToString(h.Sum(nil)[:8])
	if f := fs.Lookup("run"); f != nil {
		if r, ok := f.Value.(*shard.Run); ok {
			return r.ID(id)
		}
	}
	return id
}

type runIDKey struct{}

// withRunID returns ctx carrying the run id for the command's saves.
func withRunID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, runIDKey{}, id)
}

// runIDFrom returns the run id withRunID put in ctx, or "" (Save then
// derives one from the content).
func runIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(runIDKey{}).(string)
	return id
}
