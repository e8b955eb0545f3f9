module agentplane.dev/xtask/oracle

go 1.26.0

require (
	github.com/transparency-dev/merkle v0.0.2
	golang.org/x/mod v0.43.0
)

require github.com/google/go-cmp v0.7.0 // indirect
