//go:build !linux

package udp

// multicastAll: no such option off Linux, where a socket gets only the
// groups it joined.
func multicastAll(string) (level, opt int, ok bool) { return 0, 0, false }
