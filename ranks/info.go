package ranks

import (
	"slices"
	"sync"
)

// Limits of info keys and values (MPI_MAX_INFO_KEY, MPI_MAX_INFO_VAL),
// in bytes.
const (
	MaxInfoKey = 255
	MaxInfoVal = 1024
)

// Info is a set of hints (MPI_Info): string keys, each with a string
// value, numbered in the order they were first set. A nil *Info is
// MPI_INFO_NULL: calls that take hints accept it as "no hints", and
// Info's own methods refuse it with ErrInfo. An Info is a local object,
// safe for concurrent use.
type Info struct {
	mu   sync.Mutex
	keys []string // in the order first set
	vals []string // vals[i] is keys[i]'s value
}

// NewInfo returns an empty Info (MPI_Info_create).
func NewInfo() *Info { return &Info{} }

func nullInfo(op string) error { return newErr(ErrInfo, op, -1, "nil info (MPI_INFO_NULL)") }

func checkInfoKey(key, op string) error {
	if key == "" || len(key) > MaxInfoKey {
		return newErr(ErrInfoKey, op, -1, "key of %d bytes (1..%d)", len(key), MaxInfoKey)
	}
	return nil
}

// Set gives key the value val, adding key after the others if it is new
// (MPI_Info_set). A key is 1 to MaxInfoKey bytes (else ErrInfoKey), a
// value 1 to MaxInfoVal bytes (else ErrInfoValue).
func (in *Info) Set(key, val string) error {
	if in == nil {
		return nullInfo("Info.Set")
	}
	if err := checkInfoKey(key, "Info.Set"); err != nil {
		return err
	}
	if val == "" || len(val) > MaxInfoVal {
		return newErr(ErrInfoValue, "Info.Set", -1, "value of %d bytes for key %q (1..%d)", len(val), key, MaxInfoVal)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if i := slices.Index(in.keys, key); i >= 0 {
		in.vals[i] = val
		return nil
	}
	in.keys = append(in.keys, key)
	in.vals = append(in.vals, val)
	return nil
}

// Get returns key's value and whether key is set (MPI_Info_get_string).
func (in *Info) Get(key string) (string, bool, error) {
	if in == nil {
		return "", false, nullInfo("Info.Get")
	}
	if err := checkInfoKey(key, "Info.Get"); err != nil {
		return "", false, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if i := slices.Index(in.keys, key); i >= 0 {
		return in.vals[i], true, nil
	}
	return "", false, nil
}

// Delete removes key (MPI_Info_delete); the keys after it move down by
// one. A key that is not set gives ErrInfoNoKey.
func (in *Info) Delete(key string) error {
	if in == nil {
		return nullInfo("Info.Delete")
	}
	if err := checkInfoKey(key, "Info.Delete"); err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	i := slices.Index(in.keys, key)
	if i < 0 {
		return newErr(ErrInfoNoKey, "Info.Delete", -1, "key %q is not set", key)
	}
	in.keys = slices.Delete(in.keys, i, i+1)
	in.vals = slices.Delete(in.vals, i, i+1)
	return nil
}

// NKeys is the number of keys set (MPI_Info_get_nkeys).
func (in *Info) NKeys() (int, error) {
	if in == nil {
		return 0, nullInfo("Info.NKeys")
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.keys), nil
}

// Nthkey is key number n, counting from 0 in the order the keys were
// first set (MPI_Info_get_nthkey); n out of range gives ErrArg.
func (in *Info) Nthkey(n int) (string, error) {
	if in == nil {
		return "", nullInfo("Info.Nthkey")
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if n < 0 || n >= len(in.keys) {
		return "", newErr(ErrArg, "Info.Nthkey", -1, "key number %d of %d", n, len(in.keys))
	}
	return in.keys[n], nil
}

// Keys returns the keys in order; nil for a nil Info.
func (in *Info) Keys() []string {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.keys)
}

// Dup returns a copy with the same keys in the same order and the same
// values (MPI_Info_dup).
func (in *Info) Dup() (*Info, error) {
	if in == nil {
		return nil, nullInfo("Info.Dup")
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return &Info{keys: slices.Clone(in.keys), vals: slices.Clone(in.vals)}, nil
}

// lookup is Get for the runtime's own reading of hints: a nil Info has
// no keys.
func (in *Info) lookup(key string) (string, bool) {
	if in == nil {
		return "", false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if i := slices.Index(in.keys, key); i >= 0 {
		return in.vals[i], true
	}
	return "", false
}
