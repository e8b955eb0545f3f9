module agentplane.dev/xtask/oracle

go 1.26.0

require (
	filippo.io/mldsa v0.0.0-20260215214346-43d0283efc3e
	github.com/transparency-dev/formats v0.1.1
	github.com/transparency-dev/merkle v0.0.2
	golang.org/x/mod v0.43.0
)

require (
	filippo.io/torchwood v0.6.1 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/ncruces/go-strftime v0.1.9 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/crypto v0.52.0 // indirect
	golang.org/x/exp v0.0.0-20250408133849-7e4ce0ab07d0 // indirect
	golang.org/x/net v0.54.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	modernc.org/libc v1.65.7 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.11.0 // indirect
	modernc.org/sqlite v1.37.1 // indirect
	sigsum.org/sigsum-go v0.6.1 // indirect
	zombiezen.com/go/sqlite v1.4.2 // indirect
)

tool (
	filippo.io/torchwood/cmd/litewitness
	filippo.io/torchwood/cmd/witnessctl
)
