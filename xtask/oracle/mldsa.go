package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	"filippo.io/mldsa"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// ML-DSA-44 cosignature vectors (tlog-cosignature v1.1.0-rc.1, type 0x06).
//
// Keys come from fixed FIPS 204 seeds through filippo.io/mldsa; key ids and
// vkeys are accepted by transparency-dev/formats (NewMLDSAVerifier,
// NewVerifierForCosignatureV1), which recomputes them. Signatures use
// filippo.io/mldsa's SignDeterministic (FIPS 204's deterministic variant,
// empty context), so the file is byte-stable; every one is then verified by
// formats' own subtree/v1 code (VerifySubtree builds the message itself) and,
// for checkpoints, by note.Open with formats' cosignature verifier, so the
// message bytes written here are the ones formats signs and checks.

type mldsaKeyOut struct {
	Name      string `json:"name"`
	Seed      string `json:"seed"`
	PublicKey string `json:"public_key"`
	KeyID     string `json:"key_id"`
	SKey      string `json:"skey"`
	VKey      string `json:"vkey"`
}

type mldsaVectorOut struct {
	Comment   string `json:"comment"`
	Key       int    `json:"key"`
	Timestamp uint64 `json:"timestamp"`
	Origin    string `json:"origin"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
	Hash      string `json:"hash"`
	// Checkpoint is the note text cosigned (start 0 only), Line its signature line.
	Checkpoint string `json:"checkpoint,omitempty"`
	Line       string `json:"line"`
	Message    string `json:"message"`
	Signature  string `json:"signature"`
}

type mldsaOut struct {
	Generator string           `json:"generator"`
	Keys      []mldsaKeyOut    `json:"keys"`
	Vectors   []mldsaVectorOut `json:"vectors"`
}

func mldsaSeed(b byte) []byte {
	seed := make([]byte, mldsa.PrivateKeySize)
	for i := range seed {
		seed[i] = b*29 + byte(i)
	}
	return seed
}

func subtreeMessage(name string, timestamp uint64, origin string, start, end uint64, hash []byte) []byte {
	var m bytes.Buffer
	m.WriteString("subtree/v1\n\x00")
	m.WriteByte(byte(len(name)))
	m.WriteString(name)
	m.Write(binary.BigEndian.AppendUint64(nil, timestamp))
	m.WriteByte(byte(len(origin)))
	m.WriteString(origin)
	m.Write(binary.BigEndian.AppendUint64(nil, start))
	m.Write(binary.BigEndian.AppendUint64(nil, end))
	m.Write(hash)
	return m.Bytes()
}

func mldsaVectors() (any, error) {
	out := mldsaOut{Generator: "xtask/oracle mldsa: filippo.io/mldsa (keys, SignDeterministic) checked by github.com/transparency-dev/formats/note (NewMLDSAVerifier, VerifySubtree, NewVerifierForCosignatureV1 with golang.org/x/mod/sumdb/note Open)"}
	names := []string{
		"witness.example.com/w1",
		"oracle.test/mldsa-w2",
		strings.Repeat("n", 255),
	}
	type keyState struct {
		sk   *mldsa.PrivateKey
		id   uint32
		vkey string
	}
	var keys []keyState
	for i, name := range names {
		seed := mldsaSeed(byte(i + 1))
		sk, err := mldsa.NewPrivateKey(mldsa.MLDSA44(), seed)
		if err != nil {
			return nil, err
		}
		pub := sk.PublicKey().Bytes()
		// formats computes the key id: give it the skey with a placeholder id.
		signer, err := fnote.NewMLDSASigner(fmt.Sprintf("PRIVATE+KEY+%s+00000000+%s", name, base64.StdEncoding.EncodeToString(append([]byte{0x06}, seed...))))
		if err != nil {
			return nil, fmt.Errorf("formats refused the ML-DSA skey for %s: %v", name, err)
		}
		id := signer.KeyHash()
		sum := sha256.Sum256(append(append([]byte(name+"\n"), 0x06), pub...))
		if binary.BigEndian.Uint32(sum[:4]) != id {
			return nil, fmt.Errorf("formats' key id %08x for %s is not SHA-256(name||0x0A||0x06||pk)[:4]", id, name)
		}
		vkey := fmt.Sprintf("%s+%08x+%s", name, id, base64.StdEncoding.EncodeToString(append([]byte{0x06}, pub...)))
		v, err := fnote.NewMLDSAVerifier(vkey)
		if err != nil || v.KeyHash() != id || v.Name() != name {
			return nil, fmt.Errorf("formats refused our ML-DSA vkey for %s: %v", name, err)
		}
		skey := fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, id, base64.StdEncoding.EncodeToString(append([]byte{0x06}, seed...)))
		keys = append(keys, keyState{sk: sk, id: id, vkey: vkey})
		out.Keys = append(out.Keys, mldsaKeyOut{Name: name, Seed: hex.EncodeToString(seed), PublicKey: hex.EncodeToString(pub), KeyID: fmt.Sprintf("%08x", id), SKey: skey, VKey: vkey})
	}

	sofaRoot, _ := base64.StdEncoding.DecodeString("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")
	emptyRoot := sha256.Sum256(nil)
	otherRoot := sha256.Sum256([]byte("a subtree root"))
	cases := []struct {
		comment    string
		key        int
		timestamp  uint64
		origin     string
		start, end uint64
		hash       []byte
		extension  string
	}{
		{"the tlog-cosignature example checkpoint and timestamp", 0, 1679315147, "example.com/behind-the-sofa", 0, 20852163, sofaRoot, ""},
		{"the same checkpoint with an extension line: not covered, same message", 0, 1679315147, "example.com/behind-the-sofa", 0, 20852163, sofaRoot, "an extension line"},
		{"the empty tree, timestamp 1", 1, 1, "oracle.test/log", 0, 0, emptyRoot[:], ""},
		{"timestamp 2^63-1", 1, 1<<63 - 1, "oracle.test/log", 0, 7, otherRoot[:], ""},
		{"a subtree [8, 16) with timestamp 0 (sign-subtree)", 1, 0, "oracle.test/log", 8, 16, otherRoot[:], ""},
		{"a 255-byte cosigner name and a 255-byte origin", 2, 1700000000, strings.Repeat("o", 255), 0, 1, otherRoot[:], ""},
	}
	for _, c := range cases {
		k := keys[c.key]
		name := names[c.key]
		msg := subtreeMessage(name, c.timestamp, c.origin, c.start, c.end, c.hash)
		sig, err := k.sk.SignDeterministic(msg, nil)
		if err != nil {
			return nil, err
		}
		payload := append(binary.BigEndian.AppendUint64(nil, c.timestamp), sig...)
		v, err := fnote.NewMLDSAVerifier(k.vkey)
		if err != nil {
			return nil, err
		}
		if !v.VerifySubtree(c.timestamp, c.origin, c.start, c.end, c.hash, payload) {
			return nil, fmt.Errorf("formats' VerifySubtree refused vector %q: the message bytes here are not formats'", c.comment)
		}
		line := fmt.Sprintf("— %s %s\n", name, base64.StdEncoding.EncodeToString(append(binary.BigEndian.AppendUint32(nil, k.id), payload...)))
		vec := mldsaVectorOut{Comment: c.comment, Key: c.key, Timestamp: c.timestamp, Origin: c.origin, Start: c.start, End: c.end, Hash: hex.EncodeToString(c.hash), Line: line, Message: hex.EncodeToString(msg), Signature: hex.EncodeToString(sig)}
		if c.start == 0 {
			text := fmt.Sprintf("%s\n%d\n%s\n", c.origin, c.end, base64.StdEncoding.EncodeToString(c.hash))
			if c.extension != "" {
				text += c.extension + "\n"
			}
			cv, err := fnote.NewVerifierForCosignatureV1(k.vkey)
			if err != nil {
				return nil, err
			}
			if _, err := note.Open([]byte(text+"\n"+line), note.VerifierList(cv)); err != nil {
				return nil, fmt.Errorf("note.Open with formats' verifier refused vector %q: %v", c.comment, err)
			}
			vec.Checkpoint = text
		}
		out.Vectors = append(out.Vectors, vec)
	}
	return out, nil
}
