package main

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// benchOut is what `oracle bench-tlog BITS ITERATIONS` measures with Go's
// sumdb/tlog, the baseline `cargo xtask bench` runs beside ours: the same
// leaves (32 bytes, the index big-endian first), the same tree size, the
// same proof positions.
type benchOut struct {
	Size            int64   `json:"size"`
	AppendNsPerLeaf float64 `json:"append_ns_per_leaf"`
	InclusionNs     float64 `json:"inclusion_ns"`
	ConsistencyNs   float64 `json:"consistency_ns"`
}

func benchLeaf(i int64) []byte {
	b := make([]byte, 32)
	binary.BigEndian.PutUint64(b, uint64(i))
	return b
}

func benchTlog(args []string) (any, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("usage: oracle bench-tlog BITS ITERATIONS")
	}
	bits, err := strconv.Atoi(args[0])
	if err != nil || bits < 1 || bits > 24 {
		return nil, fmt.Errorf("BITS must be 1..24, not %q", args[0])
	}
	iterations, err := strconv.Atoi(args[1])
	if err != nil || iterations < 1 {
		return nil, fmt.Errorf("ITERATIONS must be positive, not %q", args[1])
	}
	size := int64(1) << bits
	var s storage
	start := time.Now()
	for i := int64(0); i < size; i++ {
		hashes, err := tlog.StoredHashes(i, benchLeaf(i), s)
		if err != nil {
			return nil, err
		}
		s = append(s, hashes...)
	}
	out := benchOut{Size: size}
	out.AppendNsPerLeaf = float64(time.Since(start).Nanoseconds()) / float64(size)
	index, old := size/3, size/2+1
	start = time.Now()
	for k := 0; k < iterations; k++ {
		if _, err := tlog.ProveRecord(size, index, s); err != nil {
			return nil, err
		}
	}
	out.InclusionNs = float64(time.Since(start).Nanoseconds()) / float64(iterations)
	start = time.Now()
	for k := 0; k < iterations; k++ {
		if _, err := tlog.ProveTree(size, old, s); err != nil {
			return nil, err
		}
	}
	out.ConsistencyNs = float64(time.Since(start).Nanoseconds()) / float64(iterations)
	return out, nil
}
