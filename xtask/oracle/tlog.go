package main

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/tlog"
)

// leafCount is large enough for every tree shape up to several levels, with
// partial right edges, and small enough to keep the vector file reviewable.
const leafCount = 70

type tlogOut struct {
	Generator   string              `json:"generator"`
	LeafData    []string            `json:"leaf_data"`
	LeafHashes  []string            `json:"leaf_hashes"`
	Roots       []string            `json:"roots"`
	StoredNodes []storedNode        `json:"stored_nodes"`
	Inclusion   []inclusionVector   `json:"inclusion"`
	Consistency []consistencyVector `json:"consistency"`
	Huge        hugeOut             `json:"huge"`
}

type storedNode struct {
	Level       int    `json:"level"`
	Index       int64  `json:"index"`
	StoredIndex int64  `json:"stored_index"`
	Hash        string `json:"hash"`
}

type inclusionVector struct {
	Index int64    `json:"index"`
	Size  int64    `json:"size"`
	Proof []string `json:"proof"`
}

type consistencyVector struct {
	Old   int64    `json:"old"`
	New   int64    `json:"new"`
	Proof []string `json:"proof"`
}

// leafData is deterministic: text leaves and binary leaves of growing length,
// including the empty leaf.
func leafData(i int) []byte {
	if i%2 == 0 {
		return []byte(fmt.Sprintf("agentplane oracle leaf %d", i))
	}
	b := make([]byte, i-1)
	for j := range b {
		b[j] = byte(i*31 + j*7)
	}
	return b
}

// storage implements tlog.HashReader over the hashes tlog.StoredHashes made.
type storage []tlog.Hash

func (s storage) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(s)) {
			return nil, fmt.Errorf("read of stored hash %d beyond %d", x, len(s))
		}
		out[i] = s[x]
	}
	return out, nil
}

func hexList(h [][]byte) []string {
	out := make([]string, len(h))
	for i, x := range h {
		out[i] = hex.EncodeToString(x)
	}
	return out
}

func tlogHexList(h []tlog.Hash) [][]byte {
	out := make([][]byte, len(h))
	for i := range h {
		out[i] = append([]byte(nil), h[i][:]...)
	}
	return out
}

func sameProof(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func tlogVectors() (any, error) {
	hasher := rfc6962.DefaultHasher
	ref := testonly.New(hasher)
	var store storage
	out := tlogOut{Generator: "xtask/oracle tlog: golang.org/x/mod/sumdb/tlog and github.com/transparency-dev/merkle, cross-checked"}

	// Go's sumdb/tlog defines no hash for the empty tree (TreeHash(0) is the
	// zero value); RFC 6962 defines SHA-256(""), which transparency-dev/merkle gives.
	out.Roots = append(out.Roots, hex.EncodeToString(hasher.EmptyRoot()))

	for i := 0; i < leafCount; i++ {
		data := leafData(i)
		out.LeafData = append(out.LeafData, hex.EncodeToString(data))
		goLeaf := tlog.RecordHash(data)
		tdLeaf := hasher.HashLeaf(data)
		if !bytes.Equal(goLeaf[:], tdLeaf) {
			return nil, fmt.Errorf("leaf %d: implementations disagree", i)
		}
		out.LeafHashes = append(out.LeafHashes, hex.EncodeToString(tdLeaf))

		added, err := tlog.StoredHashes(int64(i), data, store)
		if err != nil {
			return nil, err
		}
		store = append(store, added...)
		ref.AppendData(data)

		size := int64(i + 1)
		goRoot, err := tlog.TreeHash(size, store)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(goRoot[:], ref.Hash()) {
			return nil, fmt.Errorf("root of size %d: implementations disagree", size)
		}
		out.Roots = append(out.Roots, hex.EncodeToString(goRoot[:]))
	}

	for level := 0; (int64(1) << level) <= leafCount; level++ {
		for n := int64(0); (n+1)<<level <= leafCount; n++ {
			idx := tlog.StoredHashIndex(level, n)
			out.StoredNodes = append(out.StoredNodes, storedNode{Level: level, Index: n, StoredIndex: idx, Hash: hex.EncodeToString(store[idx][:])})
		}
	}

	interesting := func(size int64) bool {
		return size <= 20 || size == 31 || size == 32 || size == 33 || size == 64 || size == 65 || size == leafCount
	}
	for size := int64(1); size <= leafCount; size++ {
		if !interesting(size) {
			continue
		}
		for index := int64(0); index < size; index++ {
			goProof, err := tlog.ProveRecord(size, index, store)
			if err != nil {
				return nil, err
			}
			tdProof, err := ref.InclusionProof(uint64(index), uint64(size))
			if err != nil {
				return nil, err
			}
			if !sameProof(tlogHexList(goProof), tdProof) {
				return nil, fmt.Errorf("inclusion %d in %d: implementations disagree", index, size)
			}
			root := ref.HashAt(uint64(size))
			if err := proof.VerifyInclusion(hasher, uint64(index), uint64(size), hasher.HashLeaf(leafData(int(index))), tdProof, root); err != nil {
				return nil, fmt.Errorf("inclusion %d in %d does not verify: %v", index, size, err)
			}
			out.Inclusion = append(out.Inclusion, inclusionVector{Index: index, Size: size, Proof: hexList(tdProof)})
		}
		for old := int64(1); old <= size; old++ {
			goProof, err := tlog.ProveTree(size, old, store)
			if err != nil {
				return nil, err
			}
			tdProof, err := ref.ConsistencyProof(uint64(old), uint64(size))
			if err != nil {
				return nil, err
			}
			if !sameProof(tlogHexList(goProof), tdProof) {
				return nil, fmt.Errorf("consistency %d to %d: implementations disagree", old, size)
			}
			if err := proof.VerifyConsistency(hasher, uint64(old), uint64(size), tdProof, ref.HashAt(uint64(old)), ref.HashAt(uint64(size))); err != nil {
				return nil, fmt.Errorf("consistency %d to %d does not verify: %v", old, size, err)
			}
			out.Consistency = append(out.Consistency, consistencyVector{Old: old, New: size, Proof: hexList(tdProof)})
		}
	}
	huge, err := hugeVectors()
	if err != nil {
		return nil, err
	}
	out.Huge = huge
	return out, nil
}
