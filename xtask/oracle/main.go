// Command oracle computes reference values with implementations that are not
// ours, so that agentplane's crates are pinned to them (R-LOG-3).
//
// Usage:
//
//	oracle tlog        writes RFC 6962 roots, stored node hashes and proofs as JSON
//	oracle witness     writes notes signed by Go's sumdb/note with fixed keys, and key texts
//	oracle mldsa       writes ML-DSA-44 (type 0x06) cosignature vectors from fixed seeds,
//	                   each verified by transparency-dev/formats
//	oracle crosscheck  reads notes and cosignatures made by agentplane on stdin,
//	                   verifies them with Go, and cosigns checkpoints with formats' signer
//	oracle bench-tlog BITS ITERATIONS
//	                   times sumdb/tlog's appends and proofs at 2^BITS leaves (cargo xtask bench's baseline)
//
// tlog values are computed by golang.org/x/mod/sumdb/tlog and by
// github.com/transparency-dev/merkle; the program exits non-zero when the two
// disagree, so a vector file never holds a value only one of them produced.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: oracle tlog|witness|mldsa|crosscheck")
	}
	var out any
	var err error
	switch os.Args[1] {
	case "tlog":
		out, err = tlogVectors()
	case "witness":
		out, err = witnessVectors()
	case "mldsa":
		out, err = mldsaVectors()
	case "crosscheck":
		out, err = crosscheck()
	case "bench-tlog":
		out, err = benchTlog(os.Args[2:])
	default:
		fail("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fail("%v", err)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "oracle: "+format+"\n", args...)
	os.Exit(1)
}
