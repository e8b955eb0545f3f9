package main

// Proofs in trees near 2^64 leaves, which no one can build: a synthetic tree
// whose complete subtrees have made-up hashes, except the ancestors of the
// leaves a proof is about, which are hashed from their children so the proof
// verifies. transparency-dev/merkle says which nodes a proof takes (proof.
// Inclusion, proof.Consistency, compact.RangeNodes), how they fold (Rehash)
// and whether the proof verifies (VerifyInclusion, VerifyConsistency). The
// Rust tests build the same synthetic tree and must produce the same proofs
// and roots, and accept these.
//
// The synthetic tree, as both sides define it:
//
//	pseudo(level, index) = SHA-256("agentplane/synthetic-node" || 0x00 || level (1 byte) || index (8 bytes, big-endian))
//	node(level, index)   = HashChildren(node(level-1, 2*index), node(level-1, 2*index+1))
//	                         when level > 0 and index is an ancestor of one of the proof's leaves,
//	                       pseudo(level, index) otherwise.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

type hugeInclusion struct {
	Index uint64   `json:"index"`
	Size  uint64   `json:"size"`
	Leaf  string   `json:"leaf"`
	Root  string   `json:"root"`
	Proof []string `json:"proof"`
}

type hugeConsistency struct {
	Old     uint64   `json:"old"`
	New     uint64   `json:"new"`
	OldRoot string   `json:"old_root"`
	NewRoot string   `json:"new_root"`
	Proof   []string `json:"proof"`
}

type hugeOut struct {
	Definition  string            `json:"definition"`
	Inclusion   []hugeInclusion   `json:"inclusion"`
	Consistency []hugeConsistency `json:"consistency"`
}

type synthetic struct{ paths []uint64 }

func (s synthetic) node(level uint, index uint64) []byte {
	if level > 0 {
		for _, p := range s.paths {
			if p>>level == index {
				return rfc6962.DefaultHasher.HashChildren(s.node(level-1, 2*index), s.node(level-1, 2*index+1))
			}
		}
	}
	h := sha256.New()
	h.Write([]byte("agentplane/synthetic-node"))
	h.Write([]byte{0, byte(level)})
	var be [8]byte
	binary.BigEndian.PutUint64(be[:], index)
	h.Write(be[:])
	return h.Sum(nil)
}

func (s synthetic) fetch(ids []compact.NodeID) [][]byte {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = s.node(id.Level, id.Index)
	}
	return out
}

func (s synthetic) root(size uint64) []byte {
	hashes := s.fetch(compact.RangeNodes(0, size, nil))
	if len(hashes) == 0 {
		return rfc6962.DefaultHasher.EmptyRoot()
	}
	root := hashes[len(hashes)-1]
	for i := len(hashes) - 2; i >= 0; i-- {
		root = rfc6962.DefaultHasher.HashChildren(hashes[i], root)
	}
	return root
}

const maxU64 = ^uint64(0)

func hugeVectors() (hugeOut, error) {
	out := hugeOut{Definition: "see xtask/oracle/huge.go: pseudo(level, index) = SHA-256(\"agentplane/synthetic-node\" || 0x00 || level || be64(index)); ancestors of the proof's leaves are hashed from their children"}
	sizes := []uint64{maxU64, maxU64 - 1, 1<<63 + 1, 1 << 63, 1<<63 - 1, maxU64 - 1<<32, 1<<62 + 3}
	for _, size := range sizes {
		indexes := []uint64{0, 1, size / 2, size - 2, size - 1, 1<<62 - 1, 1<<63 - 1, 1 << 63}
		for _, index := range indexes {
			if index >= size {
				continue
			}
			tree := synthetic{paths: []uint64{index, size - 1}}
			nodes, err := proof.Inclusion(index, size)
			if err != nil {
				return out, err
			}
			path, err := nodes.Rehash(tree.fetch(nodes.IDs), rfc6962.DefaultHasher.HashChildren)
			if err != nil {
				return out, err
			}
			leaf, root := tree.node(0, index), tree.root(size)
			if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, size, leaf, path, root); err != nil {
				return out, fmt.Errorf("synthetic inclusion %d in %d does not verify: %v", index, size, err)
			}
			out.Inclusion = append(out.Inclusion, hugeInclusion{Index: index, Size: size, Leaf: hex.EncodeToString(leaf), Root: hex.EncodeToString(root), Proof: hexList(path)})
		}
	}
	pairs := [][2]uint64{{1, maxU64}, {2, maxU64}, {3, 1 << 63}, {1 << 63, maxU64}, {1<<63 - 1, 1<<63 + 1}, {1<<63 + 1, maxU64}, {maxU64 - 1, maxU64}, {1 << 62, 1<<62 + 3}, {maxU64 - 1<<32, maxU64}}
	for _, pair := range pairs {
		old, size := pair[0], pair[1]
		tree := synthetic{paths: []uint64{old - 1, size - 1}}
		nodes, err := proof.Consistency(old, size)
		if err != nil {
			return out, err
		}
		path, err := nodes.Rehash(tree.fetch(nodes.IDs), rfc6962.DefaultHasher.HashChildren)
		if err != nil {
			return out, err
		}
		oldRoot, newRoot := tree.root(old), tree.root(size)
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, old, size, path, oldRoot, newRoot); err != nil {
			return out, fmt.Errorf("synthetic consistency %d to %d does not verify: %v", old, size, err)
		}
		out.Consistency = append(out.Consistency, hugeConsistency{Old: old, New: size, OldRoot: hex.EncodeToString(oldRoot), NewRoot: hex.EncodeToString(newRoot), Proof: hexList(path)})
	}
	return out, nil
}
