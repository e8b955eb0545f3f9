// Command subtreewitness serves transparency-dev/witness's witness (the
// `witness` package at the core of omniwitness) with subtree signing enabled.
// At the pinned version neither cmd/omniwitness nor omniwitness.Main can: the
// command has no flag for it, Main does not pass OperatorConfig's
// EnableSubtreeSigning on to witness.New, and the signer the command makes
// (formats' NewSignerForCosignatureV1) is not a SubtreeSigner. This driver is
// only the wiring omniwitness.Main does; the witness, its HTTP handlers for
// add-checkpoint and sign-subtree, and the ML-DSA-44 signer
// (formats' NewMLDSASigner) are theirs.
//
// Usage: subtreewitness -listen ADDR -private_key_path FILE -logs FILE
//
// The logs file is omniwitness's --additional_logs YAML. It prints "listening"
// on stderr once its listener is bound.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	f_note "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/witness/omniwitness"
	"github.com/transparency-dev/witness/persistence/inmemory"
	"github.com/transparency-dev/witness/witness"
	"golang.org/x/mod/sumdb/note"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	keyPath := flag.String("private_key_path", "", "the witness's ML-DSA-44 skey file")
	logsPath := flag.String("logs", "", "the logs YAML (omniwitness's --additional_logs format)")
	flag.Parse()
	if err := run(*listen, *keyPath, *logsPath); err != nil {
		fmt.Fprintf(os.Stderr, "subtreewitness: %v\n", err)
		os.Exit(1)
	}
}

func run(listen, keyPath, logsPath string) error {
	ctx := context.Background()
	skey, err := os.ReadFile(keyPath)
	if err != nil {
		return err
	}
	signer, err := f_note.NewMLDSASigner(strings.TrimSpace(string(skey)))
	if err != nil {
		return fmt.Errorf("formats refused the key: %v", err)
	}
	yaml, err := os.ReadFile(logsPath)
	if err != nil {
		return err
	}
	logs, err := omniwitness.NewStaticLogConfig(yaml)
	if err != nil {
		return err
	}
	w, err := witness.New(ctx, witness.Opts{
		Persistence: inmemory.New(),
		Signers:     []note.Signer{signer},
		VerifierForLog: func(ctx context.Context, origin string) (note.Verifier, bool, error) {
			c, ok, err := logs.Log(ctx, origin)
			if err != nil || !ok {
				return nil, false, err
			}
			return c.Verifier, true, nil
		},
		EnableSubtreeSigning: true,
	})
	if err != nil {
		return err
	}
	h := witness.NewHTTPHandler(w)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add-checkpoint", h.AddCheckpoint)
	mux.HandleFunc("POST /sign-subtree", h.SignSubtree)
	listener, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "listening")
	return http.Serve(listener, mux)
}
