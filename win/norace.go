//go:build !race

package win

const raceEnabled = false
