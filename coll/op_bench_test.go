package coll_test

import (
	"testing"

	"github.com/shmpi/shmpi/coll"
)

func BenchmarkSumFloat32(b *testing.B) {
	x, y := make([]float32, 1<<17), make([]float32, 1<<17)
	b.SetBytes(4 << 17)
	for b.Loop() {
		coll.Sum(x, y)
	}
}
