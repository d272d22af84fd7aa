// Package shares is the work of the failed-group examples (15.2 and
// 15.3): Steps steps, each cut into Shares shares of Width items, whose
// values a program sums across ranks and checks against Expected.
package shares

const (
	Steps  = 40
	Shares = 64  // shares of each step's work, whatever the number of ranks
	Width  = 256 // work items in a share
)

// Value is the value of share s at step k: a sum over its items.
func Value(k, s int) int64 {
	var v int64
	for i := s * Width; i < (s+1)*Width; i++ {
		v += int64((i*(k+1) + k*k) % 10007)
	}
	return v
}

// Expected is the sum of every share over every step, computed
// sequentially.
func Expected() int64 {
	var t int64
	for k := range Steps {
		for s := range Shares {
			t += Value(k, s)
		}
	}
	return t
}
