module github.com/shmpi/shmpi

go 1.26.0

require (
	github.com/edsrzf/mmap-go v1.2.0
	github.com/klauspost/cpuid/v2 v2.4.2
	golang.org/x/sys v0.49.0
)
