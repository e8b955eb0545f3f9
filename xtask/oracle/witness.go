package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Deterministic keys: names and seeds fixed here, so that Go's signatures
// (Ed25519 is deterministic) can be committed and compared byte for byte.
var noteKeys = []struct {
	name string
	seed byte
}{
	{"example.com/log", 1},
	{"agentplane.test/plane/tenant-a", 2},
	{"witness.test/w1", 3},
}

var noteTexts = []string{
	"example.com/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
	"example.com/log\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
	"agentplane.test/plane/tenant-a\n7\nXcnaead2WamtVZy3Ad7ZqaudgjqtL0lgz+Nw7/RgQyg=\nan extension line\n",
	"If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n",
	"text with an empty line\n\ninside it, and unicode: \u00e9\u2014\u4e2d\n",
}

type witnessKey struct {
	Name string `json:"name"`
	Seed string `json:"seed"`
	// SKey is the signer key text Go's note.NewSigner accepted.
	SKey string `json:"skey"`
	// VKey is what note.NewEd25519VerifierKey made.
	VKey string `json:"vkey"`
	// CosignatureVKey is what transparency-dev/formats' VKeyToCosignatureV1 made.
	CosignatureVKey string `json:"cosignature_vkey"`
}

type signedNote struct {
	Text    string   `json:"text"`
	Signers []string `json:"signers"`
	Note    string   `json:"note"`
}

type witnessOut struct {
	Generator string       `json:"generator"`
	Keys      []witnessKey `json:"keys"`
	Notes     []signedNote `json:"notes"`
}

func seedOf(b byte) []byte {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = b*17 + byte(i)
	}
	return seed
}

func witnessVectors() (any, error) {
	out := witnessOut{Generator: "xtask/oracle witness: golang.org/x/mod/sumdb/note and github.com/transparency-dev/formats/note"}
	signers := map[string]note.Signer{}
	var verifiers []note.Verifier
	for _, k := range noteKeys {
		seed := seedOf(k.seed)
		pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
		vkey, err := note.NewEd25519VerifierKey(k.name, pub)
		if err != nil {
			return nil, err
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, err
		}
		skey := fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", k.name, v.KeyHash(), base64.StdEncoding.EncodeToString(append([]byte{1}, seed...)))
		s, err := note.NewSigner(skey)
		if err != nil {
			return nil, fmt.Errorf("Go refused the skey for %s: %v", k.name, err)
		}
		cosigVKey, err := fnote.VKeyToCosignatureV1(vkey)
		if err != nil {
			return nil, err
		}
		signers[k.name] = s
		verifiers = append(verifiers, v)
		out.Keys = append(out.Keys, witnessKey{Name: k.name, Seed: fmt.Sprintf("%x", seed), SKey: skey, VKey: vkey, CosignatureVKey: cosigVKey})
	}
	known := note.VerifierList(verifiers...)
	for i, text := range noteTexts {
		names := []string{noteKeys[i%2].name}
		if i >= 2 {
			names = append(names, noteKeys[2].name)
		}
		var use []note.Signer
		for _, n := range names {
			use = append(use, signers[n])
		}
		msg, err := note.Sign(&note.Note{Text: text}, use...)
		if err != nil {
			return nil, err
		}
		if _, err := note.Open(msg, known); err != nil {
			return nil, fmt.Errorf("Go cannot open its own note: %v", err)
		}
		out.Notes = append(out.Notes, signedNote{Text: text, Signers: names, Note: string(msg)})
	}
	return out, nil
}

// crosscheck input: notes and cosignatures made by our Rust code, with fresh
// keys; Go verifies each, and makes cosignatures of its own for Rust to verify.
type crossIn struct {
	Notes []struct {
		VKeys []string `json:"vkeys"`
		Note  string   `json:"note"`
	} `json:"notes"`
	Cosigned []struct {
		VKey string `json:"vkey"`
		Note string `json:"note"`
	} `json:"cosigned"`
	ToCosign []string `json:"to_cosign"`
}

type crossOut struct {
	NoteErrors     []string `json:"note_errors"`
	CosignedErrors []string `json:"cosigned_errors"`
	GoCosigner     string   `json:"go_cosigner_vkey"`
	GoCosigned     []string `json:"go_cosigned"`
	// The same texts cosigned by formats' ML-DSA-44 signer (hedged, fresh key).
	GoMLDSACosigner string   `json:"go_mldsa_cosigner_vkey"`
	GoMLDSACosigned []string `json:"go_mldsa_cosigned"`
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func crosscheck() (any, error) {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		return nil, err
	}
	var in crossIn
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	var out crossOut
	for _, n := range in.Notes {
		var vs []note.Verifier
		for _, k := range n.VKeys {
			v, err := note.NewVerifier(k)
			if err != nil {
				return nil, fmt.Errorf("Go refused our vkey %q: %v", k, err)
			}
			vs = append(vs, v)
		}
		_, err := note.Open([]byte(n.Note), note.VerifierList(vs...))
		out.NoteErrors = append(out.NoteErrors, errText(err))
	}
	for _, c := range in.Cosigned {
		v, err := fnote.NewVerifierForCosignatureV1(c.VKey)
		if err != nil {
			return nil, fmt.Errorf("formats refused our cosignature vkey %q: %v", c.VKey, err)
		}
		_, err = note.Open([]byte(c.Note), note.VerifierList(v))
		out.CosignedErrors = append(out.CosignedErrors, errText(err))
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, "oracle.test/formats-witness")
	if err != nil {
		return nil, err
	}
	signer, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		return nil, err
	}
	out.GoCosigner, err = fnote.VKeyToCosignatureV1(vkey)
	if err != nil {
		return nil, err
	}
	for _, text := range in.ToCosign {
		msg, err := note.Sign(&note.Note{Text: text}, signer)
		if err != nil {
			return nil, err
		}
		out.GoCosigned = append(out.GoCosigned, string(msg))
	}
	mlSKey, mlVKey, err := fnote.GenerateMLDSAKey("oracle.test/formats-mldsa-witness")
	if err != nil {
		return nil, err
	}
	mlSigner, err := fnote.NewSignerForCosignatureV1(mlSKey)
	if err != nil {
		return nil, err
	}
	out.GoMLDSACosigner = mlVKey
	for _, text := range in.ToCosign {
		msg, err := note.Sign(&note.Note{Text: text}, mlSigner)
		if err != nil {
			return nil, err
		}
		out.GoMLDSACosigned = append(out.GoMLDSACosigned, string(msg))
	}
	return out, nil
}
